"""The daemon: one capture source and one consumer thread per stream, events out to the sinks."""

from __future__ import annotations

import logging
import signal
import threading
import time
from dataclasses import dataclass
from typing import Protocol

from voxnode.audio.alsa_capture import AlsaCapture
from voxnode.audio.file_source import FileSource
from voxnode.audio.format import PERIOD_S
from voxnode.audio.levels import LevelMeter
from voxnode.audio.ring import FrameRing
from voxnode.audio.source import AudioSource
from voxnode.audio.wavfile import read_audio
from voxnode.config import Config
from voxnode.config.audio import StreamConfig
from voxnode.sinks import Sink

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunOptions:
    duration_s: float | None = None  # stop after this long (demos, tests)
    file: str | None = None  # play this file instead of capturing (single stream)
    file_realtime: bool = True


class DaemonHooks(Protocol):
    """How supervisors (systemd notify/watchdog, MQTT health) follow the daemon without owning it.

    All calls come from the daemon's main thread; a hook must return quickly.
    """

    def on_ready(self, daemon: "Daemon") -> None: ...

    def tick(self, daemon: "Daemon", now: float) -> None:
        """Called about every TICK_S while running."""

    def on_stopping(self, daemon: "Daemon") -> None: ...


TICK_S = 0.1


class StreamWorker:
    """Consumes one stream's ring. Until the speech pipeline is wired in, it reports sound levels."""

    def __init__(self, stream: StreamConfig, source: AudioSource, sinks: list[Sink]):
        self.stream = stream
        self.source = source
        self.sinks = sinks
        self._thread = threading.Thread(target=self._run, name=f"stream-{stream.name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        meter = LevelMeter(self.stream.name)
        while True:
            frame = self.source.ring.get(timeout=0.5)
            if frame is None:
                if self.source.ring.closed:
                    return
                continue
            report = meter.add(frame)
            if report is not None:
                for sink in self.sinks:
                    sink.emit(report.as_dict())


class Daemon:
    def __init__(
        self,
        config: Config,
        sinks: list[Sink],
        options: RunOptions = RunOptions(),
        hooks: list[DaemonHooks] | None = None,
    ):
        self.config = config
        self.sinks = sinks
        self.options = options
        self.hooks = list(hooks or [])
        self.started_mono = time.monotonic()
        self._stop = threading.Event()
        self.sources: list[AudioSource] = []
        self.workers: list[StreamWorker] = []
        self.muted: set[str] = set()  # DaemonControl; the pipeline drops audio of muted streams
        self.reload_requested = threading.Event()

    def request_stop(self, *_args) -> None:
        self._stop.set()

    def _make_source(self, stream: StreamConfig) -> AudioSource:
        ring = FrameRing(max(1, int(self.config.audio.ring_seconds / PERIOD_S)))
        if self.options.file:
            audio = read_audio(self.options.file, raw=self.options.file.endswith(".raw"))
            return FileSource(stream.name, audio, ring, realtime=self.options.file_realtime)
        return AlsaCapture(stream, self.config.audio, ring)

    def run(self) -> int:
        streams = self.config.effective_streams()
        for stream in streams:
            source = self._make_source(stream)
            self.sources.append(source)
            self.workers.append(StreamWorker(stream, source, self.sinks))
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self.request_stop)
            signal.signal(signal.SIGINT, self.request_stop)
        for w in self.workers:
            w.start()
        for s in self.sources:
            s.start()
        log.info("voxnode running: %d stream(s): %s", len(streams), ", ".join(s.name for s in streams))
        for hook in self.hooks:
            hook.on_ready(self)
        deadline = None if self.options.duration_s is None else time.monotonic() + self.options.duration_s
        try:
            while not self._stop.is_set():
                now = time.monotonic()
                if deadline is not None and now >= deadline:
                    break
                if all(not w.is_alive() for w in self.workers):
                    break  # every source finished (files) and its worker drained it
                for hook in self.hooks:
                    hook.tick(self, now)
                self._stop.wait(TICK_S)
        finally:
            for hook in self.hooks:
                hook.on_stopping(self)
            self.shutdown()
        return 0

    def snapshot(self) -> dict:
        """Per-stream state and counters, for health reports and STATUS= lines."""
        return {
            "uptime_s": round(time.monotonic() - self.started_mono, 1),
            "streams": {
                src.name: {**src.stats.snapshot(), "queue_depth": src.ring.depth, "dropped_frames": src.ring.dropped}
                for src in self.sources
            },
        }

    def shutdown(self) -> None:
        for s in self.sources:
            s.stop(timeout=1.0)
        for s in self.sources:
            s.ring.close()
        for w in self.workers:
            w.join(timeout=5.0)
        for sink in self.sinks:
            sink.close()
        stats = {s.name: s.stats.snapshot() for s in self.sources}
        for name, st in stats.items():
            ring = next(src.ring for src in self.sources if src.name == name)
            log.info("stream %s stopped: %d frames, %d dropped, %d xruns, %d device errors",
                     name, st["frames"], ring.dropped, st["xruns"], st["device_errors"])

    # ---- DaemonControl (voxnode.control): what remote commands (MQTT cmd topic) may change ----

    def stream_names(self) -> list[str]:
        return [s.name for s in self.config.effective_streams()]

    def set_muted(self, stream: str, muted: bool) -> None:
        if stream not in self.stream_names():
            raise KeyError(stream)
        (self.muted.add if muted else self.muted.discard)(stream)
        log.info("stream %s %s", stream, "muted" if muted else "unmuted")

    def is_muted(self, stream: str) -> bool:
        return stream in self.muted

    def request_reload(self) -> None:
        # The systemd branch carries out reloads (SIGHUP); until it is merged this only records the request.
        self.reload_requested.set()
        log.info("config reload requested")
