"""Memory housekeeping without MQTT: malloc_trim and the leak watch run whatever outputs are on.

With MQTT on, MqttService does this as part of each health report; without it,
this DaemonHooks does, and keeps the latest report for Prometheus.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from voxnode.asr.recognizer import EngineInfo
from voxnode.health.report import HealthMonitor
from voxnode.lifecycle import Hook


class HousekeepingHook(Hook):
    def __init__(self, monitor: HealthMonitor, interval_s: float,
                 engine_info: Callable[[Any], EngineInfo | None] = lambda daemon: None, keep_report: bool = False):
        self.monitor = monitor
        self.interval_s = interval_s
        self._engine_info = engine_info
        self._keep_report = keep_report
        self._next = 0.0
        self.latest: dict | None = None

    @property
    def tick_interval_s(self) -> float:
        return max(0.1, min(1.0, self.interval_s))  # it acts every interval_s; 1 s of jitter is nothing

    def on_ready(self, daemon) -> None:
        self._next = 0.0

    def tick(self, daemon, now: float) -> None:
        if now < self._next:
            return
        self._next = now + self.interval_s
        self.monitor.housekeeping(now)
        if self._keep_report:
            self.latest = self.monitor.collect(daemon.snapshot(), self._engine_info(daemon), None)
