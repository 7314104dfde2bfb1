"""The daemon: its components (delivery, outputs, recognition, streams) started in order and stopped
in reverse, hooks on the main thread, events fanned out to the outputs, one health reporter, reload
and remote control."""

from __future__ import annotations

import logging
import queue
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING

from voxnode.audio.echo_reference import reference_tap
from voxnode.audio.source import AudioSource
from voxnode.audio.sources import make_source
from voxnode.config import Config
from voxnode.config.audio import StreamConfig
from voxnode.config.mqtt import node_id_for
from voxnode.config.wording import in_config
from voxnode.control import switch_stream
from voxnode.delivery.schema import check_spool_path
from voxnode.delivery.wiring import Delivery
from voxnode.errors import VoxnodeError
from voxnode.events import TranscriptEvent
from voxnode.health.reporter import HealthReporter
from voxnode.host_view import HostView, Vitals
from voxnode.lifecycle import TICK_S, Component, Hook, start_all, stop_all
from voxnode.preflight import check_runnable
from voxnode.reload import ReloadResult, StartRetries, error_text, plan_reload, reload_on_request
from voxnode.stream.recognition import Recognition
from voxnode.stream.runtime import StreamRuntime, Streams
from voxnode.stream.worker import StreamWorker

if TYPE_CHECKING:
    from voxnode.asr.recognizer import EngineInfo, Recognizer
    from voxnode.events import Event
    from voxnode.heartbeat import Heartbeat
    from voxnode.outputs.base import Output, Sink
    from voxnode.stream.pipeline import StreamPipeline

log = logging.getLogger(__name__)

# The main loop's tick when no hook asks for a shorter one: it only checks the run's deadline and
# whether the workers are alive. Stop and reload requests wake it at once whatever the tick.
IDLE_TICK_S = 0.5
# A played file's run ends by itself, so its last finals get this long to decode, not stop_timeout_s
# (measured: 8 CPU hogs on a 2-core box, the demo's final took > 5 s; the 5 s deadline lost 8 of 8).
FILE_END_DRAIN_S = 120.0


@dataclass(frozen=True)
class RunOptions:
    duration_s: float | None = None  # stop after this long (demos, tests)
    file: str | None = None  # play this file instead of capturing (single stream)
    file_realtime: bool = True
    levels: bool = False  # emit per-second sound levels (a microphone check; demos)


class Daemon:
    def __init__(
        self,
        config: Config,
        sinks: Sequence[Sink],
        options: RunOptions = RunOptions(),
        hooks: Sequence[Hook] = (),
        reloader: Callable[[], Config] | None = None,
        recognizers: Sequence[Recognizer] = (),
    ):
        self.config = config
        self.options = options
        # The one health report, read by MQTT, Prometheus and STATUS=; it hears finals for latency.
        self.reporter = HealthReporter(config.health, node_id_for(config.mqtt), self)
        self.sinks: list[Sink] = list(sinks)
        self.hooks: list[Hook] = list(hooks)
        self.reloader = reloader  # re-reads and validates the config on SIGHUP / request_reload()
        self.started_mono = time.monotonic()
        self._stop = threading.Event()
        # Signal handlers and other threads (MQTT cmd) only enqueue; the main thread acts.
        # SimpleQueue.put is reentrant, so it is safe inside a signal handler (Event.set is not).
        self._requests: queue.SimpleQueue[str] = queue.SimpleQueue()
        self.muted: set[str] = set()  # DaemonControl; a muted stream's worker feeds silence
        self.extra_heartbeats: list[Heartbeat] = []  # workers of components the daemon does not know
        self.ready_checks: list[Callable[[], bool]] = []  # e.g. "the engine has loaded its model"
        # The running streams and their pipelines; recognition reads the pipelines from it.
        self.streams = Streams(self._make_stream, config.effective_streams())
        # `recognizers` empty: the recognition component loads [asr] engine when it starts.
        self.recognition = Recognition(
            config, self.emit, recognizers, on_decoded=self.reporter.observe_decode, running=self.streams.pipelines
        )
        self._unstarted = StartRetries()  # streams a reload could not start, retried from the main loop
        self._outputs: list[Output] = []
        self._servers: list[Component] = []
        # With a durable output, finals get their durable seq before any output sees them.
        self.delivery: Delivery | None = None
        # What every hook is given: the parts of the daemon hooks read and act on, never the daemon.
        self.view = HostView(self.vitals, self.reporter.status, self, lambda: self.config, self.emit)

    # ---- assembly (before run) ---------------------------------------------------------------

    def add_output(self, output: Output) -> None:
        """An output (voxnode.outputs): started before recognition and the streams, in the order added,
        and stopped after them; its health section reported under its name, its hook followed."""
        self._outputs.append(output)
        section = output.health()
        if section is not None:
            self.reporter.add_section(output.name, section)
        hook = output.hook()
        if hook is not None:
            self.hooks.append(hook)

    def add_server(self, component: Component) -> None:
        """A server that submits its own decode jobs (Wyoming): started after recognition, stopped
        before it, so the finals it is waiting for are still decoded."""
        self._servers.append(component)

    def _wire_delivery(self) -> None:
        """With a durable output (stdout, MQTT, webhook), the spool: each final is stored, and given its
        seq, before any output sees it; each durable output delivers from its cursor. A set
        delivery.spool_path it could never use is refused with or without one, as check-config does."""
        check_spool_path(self.config.delivery.spool_path)
        durable = [o for o in self._outputs if o.durable]
        if self.delivery is not None or not durable:
            return
        names = [o.name for o in durable]
        self.delivery = d = Delivery(self.config.delivery, names, self.reporter.model_name, self._fan_out)
        for output in durable:
            output.attach(d.cursor(output.name))
        self.reporter.add_section("delivery", d.health)

    @property
    def components(self) -> list[Component]:
        """Started in this order, stopped in reverse: the spool opens before the outputs that read it
        and closes after them; the outputs are up before the first transcript and still up for the
        last one; the sequencer stores the last finals before the outputs close. The servers
        (Wyoming) submit to the recognition, so they start after it and stop before it."""
        d = self.delivery
        first, after_outputs = ([d], [d.sequencer]) if d is not None else ([], [])
        return [*first, *self._outputs, *after_outputs, self.recognition, *self._servers, self.streams]

    def _hooks(self) -> list[Hook]:
        return [*self.hooks, self.reporter]  # the reporter last: it sees what the others just did

    def request_stop(self) -> None:
        """Stop from any thread."""
        self._requests.put("stop")
        self._stop.set()  # wakes the main loop at once

    def request_reload(self) -> None:
        """Re-read the config and apply it, from any thread (MQTT cmd). Done on the main thread."""
        self._requests.put("reload")

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        # Only enqueue: the main loop waits on this queue, and SimpleQueue's put is safe even when
        # the handler interrupts the main thread inside get(), which then returns the request.
        # Event.set here could deadlock if the signal lands while the main thread holds its lock.
        self._requests.put("reload" if signum == signal.SIGHUP else "stop")

    def _tick_interval(self) -> float:
        """The longest wait that still gives every hook the tick resolution it needs."""
        if self.options.file:
            return TICK_S  # a played file's end is noticed promptly (the run ends with it)
        wanted = min((h.tick_interval_s for h in self.hooks), default=IDLE_TICK_S)
        return min(wanted, self.reporter.tick_interval_s)

    def vitals(self) -> Vitals:
        """What readiness and liveness are decided from (systemd/liveness.py)."""
        beats = (*self.streams.heartbeats(), *self.recognition.heartbeats(), *self.extra_heartbeats)
        return Vitals(self.streams.vitals(), beats, tuple(self.ready_checks), self.config.service)

    def install_signal_handlers(self) -> None:
        """SIGTERM/SIGINT stop, SIGHUP reloads. Call early: SIGHUP's default action kills the process."""
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                signal.signal(signum, self._on_signal)

    # ---- events ------------------------------------------------------------------------------

    def emit(self, event: Event) -> None:
        """Hand one event to every output (any thread). Transcripts go through the sequencer when there
        is one (finals stored first; partials behind them, so they never overtake a final)."""
        sequencer = self.delivery.sequencer if self.delivery is not None else None
        if sequencer is not None and isinstance(event, TranscriptEvent):
            sequencer.submit(event)
        else:
            self._fan_out(event)

    def _fan_out(self, event: Event) -> None:
        for output in self._outputs:
            try:
                output.handle(event)
            except Exception:  # noqa: BLE001 - one failing output must not keep the event from the others
                log.exception("output %s failed on %r", output.name, event)
        if self.sinks:
            shown = event.as_dict()
            for sink in self.sinks:
                sink.emit(shown)
        self.reporter.observe(event)  # last: finals carry their latency

    # ---- streams -----------------------------------------------------------------------------

    def _make_source(self, stream: StreamConfig) -> AudioSource:
        return make_source(stream, self.config.audio, self.options.file, self.options.file_realtime)

    def _make_stream(self, stream: StreamConfig, pipeline: StreamPipeline | None) -> StreamRuntime:
        """`stream`'s runtime around `pipeline` (one a reload built), or a new one."""
        source = self._make_source(stream)
        if pipeline is None:
            pipeline = self.recognition.pipeline(stream.name, self.config)
        reference = None if self.options.file else reference_tap(stream, self.config.audio)  # echo_reference
        worker = StreamWorker(
            stream.name, source.ring, pipeline, self.emit, self.options.levels, self.is_muted, reference, source.pace
        )
        return StreamRuntime(stream, source, pipeline, worker, reference)

    # ---- main loop ---------------------------------------------------------------------------

    def run(self) -> int:
        self.install_signal_handlers()
        try:
            self._wire_delivery()
            hooks = self._hooks()
            for hook in hooks:
                hook.on_starting(self.view)
            start_all(self.components, self.config.service.stop_timeout_s)
        except VoxnodeError as e:  # a setting that cannot work: named with its file, as check-config does
            raise in_config(e, self.config.source) from None
        names = self.streams.names()
        log.info("voxnode running: %d stream(s): %s", len(names), ", ".join(names))
        for hook in hooks:
            hook.on_ready(self.view)
        deadline = None if self.options.duration_s is None else time.monotonic() + self.options.duration_s
        exit_code, played_out = 0, False
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
                if len(self.streams) and all(not rt.worker.is_alive() for rt in self.streams):
                    if not self.options.file:
                        # Live capture never ends by itself: this is a crash, and a non-zero exit
                        # lets systemd's Restart=on-failure bring the daemon back.
                        log.error("every stream worker has ended; exiting with status 1")
                        exit_code = 1
                    played_out = bool(self.options.file)
                    break  # every source finished (files) and its worker drained it
                if self._unstarted:
                    self._retry_streams(now)
                for hook in hooks:
                    hook.tick(self.view, now)
                wait = self._tick_interval()
                if deadline is not None:
                    wait = min(wait, max(0.0, deadline - time.monotonic()))
                woken_by = self._wait_request(wait)
        finally:
            for hook in hooks:
                hook.on_stopping(self.view)
            self.shutdown(FILE_END_DRAIN_S if played_out else None)
        return exit_code

    def _wait_request(self, timeout: float) -> str | None:
        """Sleep until a request (stop, reload) comes or `timeout` passes."""
        try:
            return self._requests.get(timeout=timeout)
        except queue.Empty:
            return None

    def _take_requests(self) -> set[str]:
        taken = set()
        while not self._requests.empty():  # the main thread is the only reader
            taken.add(self._requests.get_nowait())
        return taken

    def shutdown(self, timeout_s: float | None = None) -> None:
        """Stop capturing, let the utterances in flight finish and their finals be decoded within
        `timeout_s` (service.stop_timeout_s by default), then stop the outputs. Bounded, so
        systemd's stop never has to escalate to SIGKILL."""
        stop_all(self.components, time.monotonic() + (timeout_s or self.config.service.stop_timeout_s))

    # ---- reload ------------------------------------------------------------------------------

    def _reload_requested(self) -> None:
        reload_on_request(self, self._hooks())

    def reload(self, new_config: Config) -> ReloadResult:
        """Apply a config: unchanged streams keep running, changed ones restart.

        What can fail is done while the old streams still run: the checks `run` makes at start
        (voxnode.preflight), then the pipelines of the streams to start (their wake word models
        loaded). A failure there rejects the config and changes nothing. Only then are the old
        streams stopped. A stream that still cannot start (its model removed in between) is retried
        from the main loop while the others run; a device that cannot open backs off in its capture.
        Main thread only (it owns the set of streams); other threads call request_reload().
        """
        plan = plan_reload(self.config, new_config)
        if self.options.file and (plan.start or plan.stop or plan.restart):
            return ReloadResult(ok=False, plan=plan, error="streams cannot change while playing a file")
        starting = [s for s in new_config.effective_streams() if s.name not in plan.keep]
        try:
            check_runnable(new_config, self.config)
            pipelines = self.recognition.pipelines_for(new_config, [s.name for s in starting])
        except Exception as e:  # a VoxnodeError naming the key; or a model file the runtime cannot load
            return ReloadResult(ok=False, plan=plan, error=error_text(in_config(e, new_config.source)))
        gone = set(plan.restart) | set(plan.stop)
        self.streams.remove(gone, time.monotonic() + self.config.service.stop_timeout_s)
        for name in gone:
            self._unstarted.discard(name)
        self.config = new_config
        for stream in starting:
            self._start_stream(stream, pipelines[stream.name])
        self.streams.reorder([s.name for s in new_config.effective_streams()])
        logging.getLogger().setLevel(new_config.log.level.upper())
        return ReloadResult(ok=True, plan=plan)

    def _start_stream(self, stream: StreamConfig, pipeline: StreamPipeline | None = None) -> None:
        """Start one stream (around a reload's `pipeline`); one that cannot be built is reported and
        retried with a new pipeline (StartRetries)."""
        try:
            self.streams.add(stream, pipeline)
        except Exception as e:
            error = error_text(in_config(e, self.config.source))
            delay, new_reason = self._unstarted.failed(stream, error, self.config.audio)
            # Each reason once at error level, its repeats at debug (health's last_error and
            # device_errors count them all): a start that fails for hours is not 4 lines a minute.
            (log.error if new_reason else log.debug)(
                "stream %s cannot start: %s; retrying in %.1f s", stream.name, error, delay
            )
        else:
            if failed := self._unstarted.started(stream.name):
                tries = "try" if failed == 1 else "tries"
                log.info(
                    "stream %s started (after %d failed %s)", stream.name, failed, tries, extra={"STREAM": stream.name}
                )

    def _retry_streams(self, now: float) -> None:
        for stream in self._unstarted.due(now):
            self._start_stream(stream)

    # ---- state, for health and STATUS= -------------------------------------------------------

    def engine_info(self) -> EngineInfo | None:
        """The loaded speech model; None until the recognition component has started."""
        return self.recognition.engine_info()

    def snapshot(self) -> dict:
        """Per-stream state and counters, for health reports and STATUS= lines."""
        speech = self.recognition.stats() if self.recognition.started else None
        return {
            "uptime_s": round(time.monotonic() - self.started_mono, 1),
            "streams": {rt.name: rt.snapshot() for rt in self.streams} | self._unstarted.snapshots(),
            # Engine back-pressure: queue depth, waits, skipped partials, dropped finals.
            "speech": speech,
            # Transcripts waiting for the spool's disk, and finals the full queue refused.
            "sequencer": None if (d := self.delivery) is None else d.sequencer.snapshot(),
        }

    # ---- DaemonControl (voxnode.control): what remote commands (MQTT cmd topic) may change ----

    def stream_names(self) -> list[str]:
        return [s.name for s in self.config.effective_streams()]

    def set_muted(self, stream: str, muted: bool) -> None:
        switch_stream(self.muted, stream, muted, self.stream_names())
        log.info("stream %s %s", stream, "muted" if muted else "unmuted")

    def is_muted(self, stream: str) -> bool:
        return stream in self.muted

    def set_follow_up(self, stream: str, on: bool) -> None:
        self.recognition.set_follow_up(stream, on)

    def follow_up(self, stream: str) -> bool | None:
        return self.recognition.follow_up(stream)

    def set_playing(self, stream: str, on: bool) -> None:
        self.recognition.set_playing(stream, on)

    def playing(self, stream: str) -> bool:
        return self.recognition.playing(stream)
