"""The health report: one dict (schema docs/schemas/health.json), shared by MQTT and Prometheus."""

from __future__ import annotations

import logging
import os
import time
import tracemalloc
from collections.abc import Callable
from typing import TYPE_CHECKING

from voxnode import __version__
from voxnode.config.health import HealthConfig
from voxnode.events import iso8601
from voxnode.health.clock import ClockWatch
from voxnode.health.leakwatch import LeakWatch
from voxnode.health.memory import Heap, python_allocator, traced_memory
from voxnode.health.process import CpuMeter, rss_bytes, thread_count
from voxnode.health.thermal import Thermal

if TYPE_CHECKING:
    from voxnode.asr.recognizer import EngineInfo

log = logging.getLogger(__name__)

TRIM_FREE_BYTES = 16 << 20  # malloc holding this much freed memory: a large free just happened, trim now


class HealthMonitor:
    def __init__(
        self, config: HealthConfig, node: str, *, thermal_root: str = "/", clock: Callable[[], float] = time.monotonic
    ):
        self.config = config
        self.node = node
        self._clock = clock
        self.cpu = CpuMeter()
        self.heap = Heap()
        self.thermal = Thermal(thermal_root)
        self.clock = ClockWatch()
        self.leak = LeakWatch(config.leak_window_s, config.leak_threshold_mb * 1e6)
        self.allocator = python_allocator()
        self._next_trim = clock() + config.malloc_trim_interval_s
        self._rss_before_housekeeping: int | None = None
        if config.tracemalloc_frames and not tracemalloc.is_tracing():
            tracemalloc.start(config.tracemalloc_frames)
            log.info(
                "tracemalloc on (%d frame(s) per allocation): health reports traced memory", config.tracemalloc_frames
            )
        if self.allocator != "malloc":
            log.warning(
                "Python allocator is %r, not 'malloc': heap figures and malloc_trim cover only part of "
                "Python's memory. Run with PYTHONMALLOC=malloc (the unit and the Makefile set it)",
                self.allocator,
            )

    def housekeeping(self, now: float) -> None:
        """Trim the heap when due or after a large free; feed the leak watch; check the wall clock. Cheap;
        called per report."""
        self.clock.check()
        # The report's RSS is taken before the trim: sampled right after it, RSS read about 12 MB under the
        # VmRSS the process holds between reports (the heap grows back within seconds).
        self._rss_before_housekeeping = rss_bytes()
        heap = self.heap.info()
        due = self.config.malloc_trim_interval_s and now >= self._next_trim
        big_free = heap is not None and heap["free_bytes"] >= TRIM_FREE_BYTES
        if due or big_free:
            returned = self.heap.trim(self._rss_before_housekeeping, rss_bytes)
            self._next_trim = now + (self.config.malloc_trim_interval_s or 0)
            if returned >= 1 << 20:
                log.info("malloc_trim returned %.1f MB to the OS", returned / 1e6)
        self.leak.add(now, rss_bytes())

    def collect(self, daemon_snapshot: dict, engine: EngineInfo | None, mqtt: dict | None) -> dict:
        rss, self._rss_before_housekeeping = self._rss_before_housekeeping or rss_bytes(), None
        streams = {}
        for name, st in (daemon_snapshot.get("streams") or {}).items():
            streams[name] = {k: v for k, v in st.items() if _jsonable(v)}
        return {
            "node": self.node,
            "version": __version__,
            "time": iso8601(time.time()),
            "uptime_s": daemon_snapshot.get("uptime_s", 0.0),
            "interval_s": self.config.interval_s,  # the next report is due this long after `time`
            "process": {
                "pid": os.getpid(),
                "cpu_percent": self.cpu.percent(),
                "rss_bytes": rss,
                "threads": thread_count(),
            },
            "memory": {
                "allocator": self.allocator,
                "heap": self.heap.info(),
                "trim": {
                    "count": self.heap.trims,
                    "last_returned_bytes": self.heap.last_trim_bytes,
                    "returned_bytes_total": self.heap.trimmed_bytes_total,
                },
                "tracemalloc": traced_memory(),
                "leak": self.leak.report(),
            },
            "model": model_state(engine),
            "speech": daemon_snapshot.get("speech"),
            "streams": streams,
            "thermal": self.thermal.report(),
            "clock": self.clock.report(),
            "mqtt": mqtt,
        }


def _jsonable(v) -> bool:
    return v is None or isinstance(v, (str, int, float, bool, list, dict))


def model_state(engine: EngineInfo | None) -> dict:
    """The loaded engine (None: not loaded yet) as name/loaded/xnnpack_all_ops/info."""
    if engine is None:
        return {"name": None, "loaded": False, "xnnpack_all_ops": None, "info": None}
    return {"name": engine.model, "loaded": True, "xnnpack_all_ops": engine.fully_accelerated, "info": engine.as_dict()}
