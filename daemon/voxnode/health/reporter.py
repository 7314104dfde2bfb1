"""The one health reporter: MQTT publishes its reports, Prometheus reads its live figures, STATUS=
lines read its stream view. Schema: docs/schemas/health.json.

It runs on the daemon's main thread (a Hook, ticked after the others): every health.interval_s,
or at once when asked (`request()`, from any thread: an MQTT `health` command, a reconnect, a mute),
it does the memory housekeeping (malloc_trim, the leak watch) and, when something listens, builds
the full report and hands it to the listeners.

It is also the one place where timings are observed as they happen: as a sink it hears every final
(latency: the per-stream p50/p95 window, the last latency, the `final_latency` histogram, the time
of the last final), and the decode scheduler tells it the engine time of every decode
(`observe_decode`, the `decode_time` histogram). Prometheus reads these at scrape time.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from voxnode.config.health import HealthConfig
from voxnode.events import Event, TranscriptEvent, iso8601
from voxnode.health.histograms import DECODE_BUCKETS, FINAL_LATENCY_BUCKETS, SPEECH_SNR_BUCKETS, Histogram
from voxnode.health.latency import LatencyWindows
from voxnode.health.nodeinfo import NodeInfo, node_info
from voxnode.health.report import HealthMonitor
from voxnode.host_view import HostView, StatusFigures
from voxnode.lifecycle import Hook

if TYPE_CHECKING:
    from voxnode.asr.recognizer import EngineInfo
    from voxnode.config import Config

log = logging.getLogger(__name__)


class HealthSource(Protocol):
    """What the reporter reads (the Daemon; voxnode.standin in tests and benchmarks)."""

    config: Config  # the config in force (it changes on reload)

    def snapshot(self) -> dict:
        """uptime_s, per-stream state and counters ("streams"), engine back-pressure ("speech")."""

    def is_muted(self, stream: str) -> bool: ...

    def engine_info(self) -> EngineInfo | None: ...


class HealthReporter(Hook):
    def __init__(
        self,
        config: HealthConfig,
        node: str,
        source: HealthSource,
        *,
        monitor: HealthMonitor | None = None,
        thermal_root: str = "/",
    ):
        self.config = config
        self.source = source
        self.started_wall = time.time()  # the daemon makes its reporter as it starts
        self.monitor = monitor or HealthMonitor(config, node, thermal_root=thermal_root)
        self.latency = LatencyWindows()
        self.last_latency_ms: float | None = None
        self.final_latency = Histogram(FINAL_LATENCY_BUCKETS)  # seconds, labels (stream,)
        self.decode_time = Histogram(DECODE_BUCKETS)  # engine seconds, labels (stream, kind)
        self.final_snr = Histogram(SPEECH_SNR_BUCKETS)  # dB, labels (stream,): finals that carry one
        self.last_final: dict[str, float] = {}  # stream -> wall-clock time of its last final
        self.latest: dict | None = None  # the last full report
        self._sections: dict[str, Callable[[], dict]] = {}
        self._listeners: list[Callable[[dict], None]] = []
        self._now = threading.Event()
        self._next = 0.0
        self._last_error = ""

    # ---- registration (before the daemon runs) ---------------------------------------------------

    def add_section(self, key: str, provider: Callable[[], dict]) -> None:
        """An output's own figures, reported under `key` (MQTT: "mqtt"); called with each report."""
        self._sections[key] = provider

    def subscribe(self, listener: Callable[[dict], None]) -> None:
        """Called on the main thread with every full report. Without listeners none is built."""
        self._listeners.append(listener)

    # ---- any thread --------------------------------------------------------------------------------

    def observe(self, event: Event) -> None:
        """Every event the outputs see: finals carry their latency."""
        if isinstance(event, TranscriptEvent) and event.is_final:
            stream = event.stream
            self.latency.add(stream, event.latency_ms)
            self.final_latency.observe((stream,), event.latency_ms / 1000.0)
            if event.speech_snr_db is not None:
                self.final_snr.observe((stream,), event.speech_snr_db)
            self.last_latency_ms = float(event.latency_ms)
            self.last_final = {**self.last_final, stream: time.time()}  # replaced, never mutated: readers iterate

    def observe_decode(self, stream: str, kind: str, seconds: float) -> None:
        """Engine time of one decode (kind: final, speculative, partial, wake); the decode thread calls it."""
        self.decode_time.observe((stream, kind), seconds)

    def request(self) -> None:
        """Report at the next tick instead of at the next interval."""
        self._now.set()

    # ---- what the report and STATUS= share -------------------------------------------------------

    def streams(self, snapshot: dict | None = None) -> dict[str, dict]:
        """Per stream: capture state and counters, recognition RTF, mute, latency p50/p95."""
        snap = self.source.snapshot() if snapshot is None else snapshot
        now = time.monotonic()
        last_final = self.last_final
        out = {}
        for name, st in (snap.get("streams") or {}).items():
            view = {**st, "muted": self.source.is_muted(name), **self.latency.report(name)}
            # Monotonic times mean nothing to another machine: say how long ago instead.
            last_frame = st.get("last_frame_mono")
            view["audio_age_s"] = round(max(0.0, now - last_frame), 1) if last_frame else None
            view["last_final"] = iso8601(last_final[name]) if name in last_final else None
            out[name] = view
        return out

    def status(self) -> StatusFigures:
        """What the STATUS= line shows: per-stream state and the last latency."""
        return StatusFigures(self.streams(), self.last_latency_ms)

    def sections(self) -> dict[str, dict]:
        """The outputs' own figures now (MQTT's), as in the report; any thread."""
        return {key: provider() for key, provider in self._sections.items()}

    def node_info(self) -> NodeInfo:
        """Board, OS, kernel, model and config checksums (the config in force)."""
        return node_info(self.source.config)

    def engine_info(self) -> EngineInfo | None:
        """The loaded model; None before it is loaded (also for transcripts' `model`, any thread)."""
        try:
            return self.source.engine_info()
        except Exception as e:  # an engine that cannot say what it is must not stop health reports
            log.debug("engine info unavailable: %s", e)
            return None

    def model_name(self) -> str:
        """The loaded model's name, "" before it is loaded (finals carry it as `model`; any thread)."""
        info = self.engine_info()
        return info.model if info is not None else ""

    def report(self, now: float) -> dict:
        """The full report (runs the memory housekeeping first)."""
        self.monitor.housekeeping(now)
        snapshot = self.source.snapshot()
        report = self.monitor.collect({**snapshot, "streams": self.streams(snapshot)}, self.engine_info(), None)
        report.update(self.sections())
        self.latest = report
        return report

    # ---- Hook --------------------------------------------------------------------------------------

    @property
    def tick_interval_s(self) -> float:
        return max(0.1, min(1.0, self.config.interval_s))  # it acts every interval_s; 1 s of jitter is nothing

    def on_ready(self, host: HostView) -> None:
        self.request()

    def tick(self, host: HostView, now: float) -> None:
        if not (self._now.is_set() or now >= self._next):
            return
        self._now.clear()
        self._next = now + self.config.interval_s
        # Runs on the main thread: an exception here would stop the daemon, so none gets out.
        try:
            if not self._listeners:
                self.monitor.housekeeping(now)  # malloc_trim and the leak watch run whatever outputs are on
                return
            report = self.report(now)
            for listener in self._listeners:
                listener(report)
        except Exception as e:
            if type(e).__name__ != self._last_error:
                log.exception("health report failed (further failures of this kind are logged at debug)")
            else:
                log.debug("health report failed: %s", e)
            self._last_error = type(e).__name__
