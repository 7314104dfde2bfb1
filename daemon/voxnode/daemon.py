"""The daemon: one capture source and one consumer thread per stream, events out to the sinks."""

from __future__ import annotations

import logging
import queue
import signal
import threading
import time
from dataclasses import dataclass
from typing import Callable, Protocol

import numpy as np

from voxnode.audio.alsa_capture import AlsaCapture
from voxnode.audio.audio_stream import AudioStream
from voxnode.audio.file_source import FileSource
from voxnode.audio.format import PERIOD_S
from voxnode.audio.frames import Frame
from voxnode.audio.levels import LevelMeter
from voxnode.audio.ring import FrameRing
from voxnode.audio.source import AudioSource
from voxnode.config import Config
from voxnode.config.audio import StreamConfig
from voxnode.errors import VoxnodeError
from voxnode.heartbeat import Heartbeat
from voxnode.sequencer import FinalStore, Sequencer
from voxnode.service.reload import ReloadResult, plan_reload
from voxnode.sinks import Sink
from voxnode.stream.pipeline import StreamPipeline
from voxnode.stream.scheduler import Recognizer
from voxnode.stream.service import SpeechService

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunOptions:
    duration_s: float | None = None  # stop after this long (demos, tests)
    file: str | None = None  # play this file instead of capturing (single stream)
    file_realtime: bool = True
    levels: bool = False  # emit per-second sound levels (a microphone check; demos)


class DaemonHooks(Protocol):
    """How supervisors (systemd notify/watchdog, MQTT health) follow the daemon without owning it.

    All calls come from the daemon's main thread; a hook must return quickly.
    """

    def on_ready(self, daemon: "Daemon") -> None: ...

    def tick(self, daemon: "Daemon", now: float) -> None:
        """Called about every TICK_S while running (every `tick_interval_s`, if the hook has one)."""

    def on_stopping(self, daemon: "Daemon") -> None: ...

    # Optional (looked up with getattr, so hooks written before reload existed still fit):
    #   tick_interval_s               how often tick() is needed (seconds; read each tick; default TICK_S)
    #   on_reloading(daemon)          before the config is re-read
    #   on_reloaded(daemon, result)   after it was applied or rejected (result: ReloadResult)


class Drainable(Protocol):
    """Work that must finish on shutdown, after the stream workers (e.g. the decode scheduler's finals)."""

    def drain(self, timeout: float) -> bool:
        """Finish what is in flight within `timeout` seconds; False if something was cut off."""


TICK_S = 0.1
# The main loop's tick when no hook asks for a shorter one: it only checks the run's deadline and
# whether the workers are alive. Stop and reload requests wake it at once whatever the tick.
IDLE_TICK_S = 0.5
# A stream worker in silence takes its frames IDLE_BATCH at a time (100 ms: speech onsets are
# seen up to that much later, endpoints and finals not at all); at most MAX_BATCH per wake-up.
IDLE_BATCH = 5
MAX_BATCH = 50


class PipelineWorker(Protocol):
    """What the daemon and the watchdog use of a stream's consumer (the stream pipeline replaces
    StreamWorker; it must keep these)."""

    stream: StreamConfig
    source: AudioSource
    heartbeat: Heartbeat  # `with heartbeat.busy():` around each frame (or batch of frames)

    def start(self) -> None: ...

    def is_alive(self) -> bool: ...

    def drain(self, timeout: float) -> bool:
        """After the ring is closed: finish the frames left and the utterance in flight (flush),
        within `timeout`; False if cut off."""


class StreamWorker:
    """Consumes one stream's ring: sound levels, and the speech pipeline (VAD -> transcripts)."""

    def __init__(
        self,
        stream: StreamConfig,
        source: AudioSource,
        sinks: list[Sink],
        pipeline: StreamPipeline | None = None,
        levels: bool = False,
        is_muted: Callable[[str], bool] = lambda _name: False,
    ):
        self.stream = stream
        self.source = source
        self.sinks = sinks
        self.pipeline = pipeline
        self.levels = levels
        self.is_muted = is_muted
        self.heartbeat = Heartbeat(f"stream-{stream.name}")
        self._thread = threading.Thread(target=self._run, name=f"stream-{stream.name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def _idle(self) -> bool:
        """Nothing is being said: no utterance open, so a frame's result is not waited for."""
        return self.pipeline is None or getattr(self.pipeline, "idle", False)

    def _run(self) -> None:
        meter = LevelMeter(self.stream.name) if self.levels else None
        silence = None
        ring = self.source.ring
        while True:
            # In silence, wake once per IDLE_BATCH frames instead of once per frame (the wake-up,
            # not the signal work, is most of the idle CPU); once speech starts, every frame is
            # handled as it arrives, so endpoints and finals are not delayed.
            frames = ring.get_batch(MAX_BATCH, IDLE_BATCH if self._idle() else 1, timeout=0.5)
            if not frames:
                if ring.closed:
                    break
                continue
            with self.heartbeat.busy():
                for frame in frames:
                    if self.is_muted(self.stream.name):
                        # A muted microphone hears silence: speech before the mute still ends
                        # and gets its final, nothing said after it is transcribed or measured.
                        if silence is None or silence.shape != frame.samples.shape:
                            silence = np.zeros_like(frame.samples)
                        frame = Frame(frame.seq, silence, frame.t_mono, frame.t_wall)
                    report = meter.add(frame) if meter is not None else None
                    if report is not None:
                        for sink in self.sinks:
                            sink.emit(report.as_dict())
                    if self.pipeline is not None:
                        self.pipeline.feed(frame.samples, frame.seq, frame.t_mono, frame.t_wall)
        if self.pipeline is not None:
            with self.heartbeat.busy():
                self.pipeline.flush()  # the utterance in flight (or a file's last one) still gets its final

    def drain(self, timeout: float) -> bool:
        """Finish the frames (and the utterance) in flight once the ring is closed."""
        self._thread.join(timeout)
        return not self._thread.is_alive()


class _LatencyTap:
    """Remembers the latency of the last transcript, for STATUS= lines and health reports."""

    def __init__(self):
        self.last_latency_ms: float | None = None

    def emit(self, event: dict) -> None:
        if event.get("type") == "final" and "latency_ms" in event:
            self.last_latency_ms = float(event["latency_ms"])

    def close(self) -> None:
        pass


SOURCE_STOP_S = 1.0  # how long all capture threads together get to leave their reads
SEQUENCER_STOP_S = 2.0  # at least this long to store the finals decoded in the last moment (an fsync each)


def _stop_and_drain(pairs: list[tuple[AudioSource, "StreamWorker"]], deadline: float, timeout: float) -> None:
    """Stop these sources, then let their workers finish what they hold, all by `deadline`.

    Every source is told to stop before any is waited for, and they share one short
    wait: a capture blocked in an ALSA read (a stalled device) must not eat the
    budget of the workers' utterances, stream after stream.
    """
    for source, _ in pairs:
        source.stop(timeout=0)
    join_by = min(deadline, time.monotonic() + SOURCE_STOP_S)
    for source, _ in pairs:
        source.stop(timeout=max(0.0, join_by - time.monotonic()))
        source.ring.close()  # a capture stuck in a read never closes its ring itself
    for source, worker in pairs:
        if not worker.drain(max(0.0, deadline - time.monotonic())):
            log.warning(
                "stream %s: worker did not finish within %.1f s; an utterance it held is lost",
                source.name,
                timeout,
                extra={"STREAM": source.name},
            )


class Daemon:
    def __init__(
        self,
        config: Config,
        sinks: list[Sink],
        options: RunOptions = RunOptions(),
        hooks: list[DaemonHooks] | None = None,
        reloader: Callable[[], Config] | None = None,
        recognizer: Recognizer | list[Recognizer] | None = None,
        journal: FinalStore | None = None,
    ):
        self.config = config
        self._latency = _LatencyTap()
        self.sinks = [*sinks, self._latency]
        self.options = options
        self.hooks = list(hooks or [])
        self.reloader = reloader  # re-reads and validates the config on SIGHUP / request_reload()
        self.started_mono = time.monotonic()
        self._stop = threading.Event()
        # Signal handlers and other threads (MQTT cmd) only enqueue; the main thread acts.
        # SimpleQueue.put is reentrant, so it is safe inside a signal handler (Event.set is not).
        self._requests: queue.SimpleQueue[str] = queue.SimpleQueue()
        self.sources: list[AudioSource] = []
        self.workers: list[StreamWorker] = []
        self.muted: set[str] = set()  # DaemonControl; the pipeline drops audio of muted streams
        self.extra_heartbeats: list[Heartbeat] = []  # decode workers etc., registered by whoever owns them
        self.ready_checks: list[Callable[[], bool]] = []  # e.g. "the engine has loaded its model"
        self.drainables: list[Drainable] = []
        self.stopping = False
        self.recognizer = recognizer  # None: load the Whisper engine from [asr] in run()
        self.speech: SpeechService | None = None
        # With a journal (the MQTT spool), finals get their durable seq before any sink sees them.
        self.sequencer = Sequencer(journal, self._fan_out) if journal is not None else None

    def request_stop(self) -> None:
        """Stop from any thread."""
        self._requests.put("stop")
        self._stop.set()  # wakes the main loop at once

    def request_reload(self) -> None:
        """Re-read the config and apply it, from any thread (MQTT cmd). Done on the main thread."""
        self._requests.put("reload")

    def _on_signal(self, signum: int, _frame) -> None:
        # Only enqueue: the main loop waits on this queue, and SimpleQueue's put is safe even when
        # the handler interrupts the main thread inside get(), which then returns the request.
        # Event.set here could deadlock if the signal lands while the main thread holds its lock.
        self._requests.put("reload" if signum == signal.SIGHUP else "stop")

    def _tick_interval(self) -> float:
        """The longest wait that still gives every hook the tick resolution it needs."""
        if self.options.file:
            return TICK_S  # a played file's end is noticed promptly (the run ends with it)
        return min((getattr(h, "tick_interval_s", TICK_S) for h in self.hooks), default=IDLE_TICK_S)

    def heartbeats(self) -> list[Heartbeat]:
        return [w.heartbeat for w in self.workers] + list(self.extra_heartbeats)

    def install_signal_handlers(self) -> None:
        """SIGTERM/SIGINT stop, SIGHUP reloads. Call early: SIGHUP's default action kills the process."""
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                signal.signal(signum, self._on_signal)

    def _make_source(self, stream: StreamConfig) -> AudioSource:
        ring = FrameRing(max(1, int(self.config.audio.ring_seconds / PERIOD_S)))
        if self.options.file:
            # Streamed: the header is checked now (a bad file stops the start with one line), the samples are
            # read block by block as they are played, so a long file never sits whole in memory.
            audio = AudioStream(self.options.file, raw=self.options.file.endswith(".raw"))
            return FileSource(stream.name, audio.blocks(), ring, realtime=self.options.file_realtime)
        return AlsaCapture(stream, self.config.audio, ring)

    def _emit_transcript(self, event) -> None:
        self.emit(event.as_dict())

    def emit(self, event: dict) -> None:
        """An event to the sinks, from any thread. Transcripts go through the sequencer when there is one."""
        if self.sequencer is not None and event.get("type") in ("final", "partial"):
            self.sequencer.submit(event)
        else:
            self._fan_out(event)

    def _fan_out(self, event: dict) -> None:
        for sink in self.sinks:
            sink.emit(event)

    def _start_speech(self) -> None:
        """One engine and one decode scheduler shared by every stream."""
        if self.recognizer is None:
            from voxnode.asr import WhisperEngine, default_model_dir

            model_dir = default_model_dir(self.config.asr.model_dir)
            # One engine per decode worker: an engine serves one call at a time.
            engines = [
                WhisperEngine.load(model_dir, self.config.asr.num_threads)
                for _ in range(self.config.stream.decode_workers)
            ]
            self.recognizer = engines[0] if len(engines) == 1 else engines
        self.speech = SpeechService(self.config, self.recognizer, self._emit_transcript)
        self.speech.start()
        self.extra_heartbeats.extend(self.speech.heartbeats())
        self.drainables.append(self.speech)  # queued finals are decoded before the sinks close

    def _start_stream(self, stream: StreamConfig) -> None:
        source = self._make_source(stream)
        pipeline = self.speech.pipeline(stream.name, self.config) if self.speech is not None else None
        worker = StreamWorker(stream, source, self.sinks, pipeline, levels=self.options.levels, is_muted=self.is_muted)
        self.sources.append(source)
        self.workers.append(worker)
        worker.start()
        source.start()

    def _stop_streams(self, names: set[str], timeout: float) -> None:
        """Stop these streams together, letting each worker finish its frames within `timeout`."""
        pairs = [(s, w) for s, w in zip(self.sources, self.workers) if s.name in names]
        _stop_and_drain(pairs, time.monotonic() + timeout, timeout)
        self.sources = [s for s in self.sources if s.name not in names]
        self.workers = [w for w in self.workers if w.stream.name not in names]
        if self.speech is not None:
            for name in names:
                self.speech.remove(name)

    def run(self) -> int:
        self.install_signal_handlers()
        streams = self.config.effective_streams()
        if self.sequencer is not None:
            self.sequencer.start()
        self._start_speech()
        for stream in streams:
            self._start_stream(stream)
        log.info("voxnode running: %d stream(s): %s", len(streams), ", ".join(s.name for s in streams))
        for hook in self.hooks:
            hook.on_ready(self)
        deadline = None if self.options.duration_s is None else time.monotonic() + self.options.duration_s
        exit_code = 0
        woken_by: str | None = None
        try:
            while not self._stop.is_set():
                requests = self._take_requests()
                if woken_by is not None:
                    requests.add(woken_by)
                if "stop" in requests:
                    log.info("stop requested")
                    break
                if "reload" in requests:
                    self._reload_requested()
                now = time.monotonic()
                if deadline is not None and now >= deadline:
                    break
                if all(not w.is_alive() for w in self.workers):
                    if not self.options.file:
                        # Live capture never ends by itself: this is a crash, and a non-zero exit
                        # lets systemd's Restart=on-failure bring the daemon back.
                        log.error("every stream worker has ended; exiting with status 1")
                        exit_code = 1
                    break  # every source finished (files) and its worker drained it
                for hook in self.hooks:
                    hook.tick(self, now)
                wait = self._tick_interval()
                if deadline is not None:
                    wait = min(wait, max(0.0, deadline - time.monotonic()))
                woken_by = self._wait_request(wait)
        finally:
            self.stopping = True
            for hook in self.hooks:
                hook.on_stopping(self)
            self.shutdown()
        return exit_code

    def _wait_request(self, timeout: float) -> str | None:
        """Sleep until a request (stop, reload) comes or `timeout` passes."""
        try:
            return self._requests.get(timeout=timeout)
        except queue.Empty:
            return None

    def _take_requests(self) -> set[str]:
        taken = set()
        while True:
            try:
                taken.add(self._requests.get_nowait())
            except queue.Empty:
                return taken

    def _reload_requested(self) -> None:
        for hook in self.hooks:
            getattr(hook, "on_reloading", lambda d: None)(self)
        if self.reloader is None:
            result = ReloadResult(ok=False, error="this run has no config file to re-read")
        else:
            try:
                new_config = self.reloader()
            except VoxnodeError as e:
                result = ReloadResult(ok=False, error=str(e))
            except Exception as e:  # a reload must never take the running daemon down
                log.exception("unexpected error while reading the config")
                result = ReloadResult(ok=False, error=f"{type(e).__name__}: {e}")
            else:
                result = self.reload(new_config)
        if result.ok:
            log.info("config %s", result.summary())
        else:
            log.error("config %s", result.summary())
        for hook in self.hooks:
            getattr(hook, "on_reloaded", lambda d, r: None)(self, result)

    def reload(self, new_config: Config) -> ReloadResult:
        """Apply a validated config: unchanged streams keep running, changed ones restart.

        Main thread only (it owns the stream lists); other threads call request_reload().
        """
        plan = plan_reload(self.config, new_config)
        if self.options.file and (plan.start or plan.stop or plan.restart):
            return ReloadResult(ok=False, plan=plan, error="streams cannot change while playing a file")
        self._stop_streams(set(plan.restart) | set(plan.stop), self.config.service.stop_timeout_s)
        self.config = new_config
        if self.speech is not None:
            self.speech.reconfigure(new_config)
        for stream in new_config.effective_streams():
            if stream.name not in plan.keep:
                self._start_stream(stream)
        # Keep the config's order, which snapshots and STATUS lines follow.
        order = {s.name: i for i, s in enumerate(new_config.effective_streams())}
        # New lists, not sort(): a list being sorted in place looks empty to another thread's snapshot().
        self.sources = sorted(self.sources, key=lambda s: order[s.name])
        self.workers = sorted(self.workers, key=lambda w: order[w.stream.name])
        logging.getLogger().setLevel(new_config.log.level.upper())
        return ReloadResult(ok=True, plan=plan)

    def snapshot(self) -> dict:
        """Per-stream state and counters, for health reports and STATUS= lines."""
        speech = self.speech.stats() if self.speech is not None else None
        per_stream = speech["streams"] if speech else {}
        return {
            "uptime_s": round(time.monotonic() - self.started_mono, 1),
            "last_latency_ms": self._latency.last_latency_ms,
            "streams": {src.name: self._stream_snapshot(src, per_stream.get(src.name, {})) for src in self.sources},
            # Engine back-pressure: queue depth, waits, skipped partials, dropped finals.
            "speech": speech,
            "sequencer": (
                {"queue_depth": self.sequencer.depth, "refused": self.sequencer.refused}
                if self.sequencer is not None
                else None
            ),
        }

    @staticmethod
    def _stream_snapshot(src: AudioSource, speech: dict) -> dict:
        snap = {**src.stats.snapshot(), "queue_depth": src.ring.depth, "dropped_frames": src.ring.dropped}
        if speech.get("rtf") is not None:  # known once the stream has had something decoded
            snap["rtf"] = speech["rtf"]
        return snap

    def shutdown(self) -> None:
        """Stop capturing, let the workers finish the utterances in flight within service.stop_timeout_s,
        then flush the sinks. Bounded, so systemd's stop never has to escalate to SIGKILL."""
        timeout = self.config.service.stop_timeout_s
        deadline = time.monotonic() + timeout
        _stop_and_drain(list(zip(self.sources, self.workers)), deadline, timeout)
        for d in self.drainables:
            if not d.drain(max(0.0, deadline - time.monotonic())):
                log.warning("%s: work in flight not finished within %.1f s", type(d).__name__, timeout)
        if self.sequencer is not None:
            # Finals still queued are stored and shown; a power cut now loses none that were shown.
            self.sequencer.stop(max(deadline, time.monotonic() + SEQUENCER_STOP_S))
        for sink in self.sinks:
            sink.close()
        stats = {s.name: s.stats.snapshot() for s in self.sources}
        for name, st in stats.items():
            ring = next(src.ring for src in self.sources if src.name == name)
            log.info(
                "stream %s stopped: %d frames, %d dropped, %d xruns, %d device errors",
                name,
                st["frames"],
                ring.dropped,
                st["xruns"],
                st["device_errors"],
            )

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
