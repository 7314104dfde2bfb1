"""Recognition for every stream of the process: the engines, the decode scheduler that shares them,
and the making of each stream's StreamPipeline. Which pipelines run is not kept here: `Streams`
(stream/runtime.py) owns them, and recognition reads them through the `running` view it is given
(the controls, follow-up and playing, and the per-stream stats).

A `Component`: started before the streams (it loads the engines `[asr]` names unless given some)
and stopped after them, so that the finals still queued are decoded and published. Its children, the
decode scheduler and the end-of-turn model (`[vad] end_of_turn`), are started and stopped through
`start_all`/`stop_all`: one that fails to start stops those already started.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from voxnode.asr.recognizer import EngineInfo, Recognizer
from voxnode.config import Config
from voxnode.events import TranscriptEvent, WakeEvent
from voxnode.heartbeat import Heartbeat
from voxnode.lifecycle import Component, start_all, stop_all

from .params import pipeline_params, scheduler_params, wake_params
from .pipeline import StreamPipeline
from .scheduler import DecodeScheduler
from .turn import TurnDetector
from .wake_gate import WakeGate

log = logging.getLogger(__name__)


class Recognition(Component):
    def __init__(
        self,
        config: Config,
        emit: Callable[[TranscriptEvent | WakeEvent], None],
        recognizers: Sequence[Recognizer] = (),
        clock: Callable[[], float] = time.monotonic,
        on_decoded: Callable[[str, str, float], None] | None = None,
        running: Callable[[], Mapping[str, StreamPipeline]] = dict,
    ):
        self._config = config
        self._emit = emit
        self._clock = clock
        self._on_decoded = on_decoded  # (stream, kind, engine seconds) after each decode
        self.recognizers = list(recognizers)  # empty: start() loads [asr] engine, one per decode worker
        self._owned: list[Recognizer] = []  # the engines start() loaded: stop() closes them, the giver closes its own
        self._stopped_info: EngineInfo | None = None  # the model stop() unloaded: finals stored after it name it
        self._scheduler: DecodeScheduler | None = None
        self._turn: TurnDetector | None = None  # [vad] end_of_turn; started with the first config that asks
        self._children: list[Component] = []  # started, in order: the scheduler, then the end-of-turn model
        self._running = running  # the running streams' pipelines by name (Streams.pipelines); none by default
        # The follow-up switch (Home Assistant) by stream: held until a restart, reloads included.
        self._follow_up: dict[str, bool] = {}
        self._playing: dict[str, bool] = {}  # the `playing` input per stream (MQTT), kept across reloads

    @property
    def scheduler(self) -> DecodeScheduler:
        if self._scheduler is None:
            raise RuntimeError("recognition has not started")
        return self._scheduler

    def start(self) -> None:
        if not self.recognizers:
            from voxnode.asr.backends import load_recognizers

            self.recognizers = self._owned = load_recognizers(self._config.asr, self._config.stream.decode_workers)
        try:
            # Before the first utterance can arrive: its final would otherwise pay the runtime's
            # first-call work (x86: +30 ms on a 2 s final; emulated Pi 4: +110-213 ms, and the
            # warm-up 0.41-0.45 s at start; docs/asr.md "Warm-up").
            # Engines handed in (tests, benchmarks) are the caller's to warm.
            for engine in self._owned:
                log.info("asr: warmed up in %.0f ms", engine.warm_up())
            scheduler = DecodeScheduler(
                self.recognizers, scheduler_params(self._config), self._clock, on_decoded=self._on_decoded
            )
            turn = TurnDetector() if self._config.vad.end_of_turn != "off" else None
            children: list[Component] = [scheduler] if turn is None else [scheduler, turn]
            start_all(children, self._config.service.stop_timeout_s)
        except BaseException:
            self._unload()
            raise
        self._scheduler, self._turn, self._children = scheduler, turn, children

    def _unload(self) -> None:
        """A start that fails, and stop(): the engines start() loaded are closed and forgotten (a
        later start loads them anew instead of decoding with closed ones); engines it was given stay."""
        if self._owned:
            self.recognizers = []
        for engine in self._owned:
            engine.close()
        self._owned = []

    def _start_turn(self, config: Config) -> None:
        """A reload that turns the end-of-turn model on starts it; one that fails to start raises, and
        the reload is refused (pipelines_for puts the old config back)."""
        if config.vad.end_of_turn != "off" and self._turn is None:
            turn = TurnDetector()
            turn.start()
            self._turn = turn
            self._children.append(turn)

    @property
    def started(self) -> bool:
        return self._scheduler is not None

    def engine_info(self) -> EngineInfo | None:
        """The loaded model (every decode worker's engine is the same one); None before start(). After
        stop() still the model it unloaded: the sequencer and MQTT, stopped after recognition, store
        and publish the last finals (and the offline status) with its name."""
        return self.recognizers[0].info if self.recognizers else self._stopped_info

    def pipeline(self, stream: str, config: Config | None = None) -> StreamPipeline:
        """A new pipeline for `stream`, under `config` (the current one by default). Not registered
        anywhere: it runs, and the controls reach it, once its stream is added to `Streams`."""
        config = config or self._config
        wake = wake_params(config, stream)
        gate = WakeGate(wake) if wake is not None else None
        if gate is not None and stream in self._follow_up:
            gate.follow_up = self._follow_up[stream]
        turn = self._turn if config.vad.end_of_turn != "off" else None
        p = StreamPipeline(
            stream, pipeline_params(config, stream), self.scheduler, self._emit, self._clock, wake=gate, turn=turn
        )
        p.playback.input = self._playing.get(stream, False)
        return p

    def pipelines_for(self, config: Config, streams: Sequence[str]) -> dict[str, StreamPipeline]:
        """A reload's pipelines for `streams` under `config`, built while the old streams still run
        (their pipelines are left as they are). From here on new pipelines use `config`; when one
        cannot be built (a wake word model that does not load) or the end-of-turn model `config`
        turns on cannot start, the old config is put back and the error raised: the reload is refused."""
        old = self._config
        try:
            self.reconfigure(config)  # starts the end-of-turn model if `config` turns it on
            return {name: self.pipeline(name, config) for name in streams}
        except BaseException:
            self.reconfigure(old)
            raise

    def set_follow_up(self, stream: str, on: bool) -> None:
        """Raises KeyError for a stream that is not running or has no wake word."""
        p = self._running().get(stream)
        if p is None or p.wake is None:
            raise KeyError(stream)
        self._follow_up[stream] = p.wake.follow_up = on
        log.info("stream %s: follow-up %s", stream, "on" if on else "off", extra={"STREAM": stream})

    def set_playing(self, stream: str, on: bool) -> None:
        """The `playing` input (stream/playback.py). Raises KeyError for a stream that is not running."""
        p = self._running().get(stream)
        if p is None:
            raise KeyError(stream)
        self._playing[stream] = p.playback.input = on
        log.info("stream %s: the node is %s", stream, "playing" if on else "not playing", extra={"STREAM": stream})

    def playing(self, stream: str) -> bool:
        p = self._running().get(stream)
        return p is not None and p.playback.input

    def follow_up(self, stream: str) -> bool | None:
        p = self._running().get(stream)
        return p.wake.follow_up if p is not None and p.wake is not None else None

    def reconfigure(self, config: Config) -> None:
        """After a reload: new pipelines use `config`; queue limits apply at once.
        The number of decode workers changes only with a restart."""
        self._config = config
        if self._scheduler is not None:
            self._scheduler.params = scheduler_params(config)
            self._start_turn(config)

    def heartbeats(self) -> list[Heartbeat]:
        return self._scheduler.heartbeats if self._scheduler is not None else []

    def stop(self, deadline: float) -> None:
        """After every pipeline is flushed: decode and publish the queued finals by `deadline`, then stop."""
        if self._scheduler is None:
            return
        timeout = max(0.0, deadline - time.monotonic())
        dropped = self._scheduler.stats()["finals_dropped"]
        stop_all(self._children, deadline)  # the end-of-turn model, then the scheduler (its finals decoded)
        st = self.stats()
        cut = st["scheduler"]["finals_dropped"] - dropped
        if cut:
            log.warning("recognition: %d queued final(s) not decoded within %.1f s", cut, timeout)
        log.info("speech stopped: %s", st)
        if self._owned:  # forgotten below; the model's info outlives them (engine_info)
            self._stopped_info = self._owned[0].info
        self._unload()  # after the scheduler: its workers have stopped decoding, or are past the deadline

    def stats(self) -> dict[str, Any]:
        """Scheduler back-pressure counters and each pipeline's; call once started."""
        return {
            "scheduler": self.scheduler.stats(),
            **({"end_of_turn": self._turn.stats()} if self._turn is not None else {}),
            "streams": {n: p.stats.as_dict() for n, p in self._running().items()},
        }
