"""All streams of the process around one shared engine.

The daemon creates one SpeechService, asks it for a StreamPipeline per
stream, feeds each pipeline from its stream's consumer thread, and stops the
service last so queued finals are still decoded and published.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from voxnode.asr.recognizer import EngineInfo, Recognizer
from voxnode.config import Config
from voxnode.events import TranscriptEvent
from voxnode.heartbeat import Heartbeat

from .params import pipeline_params, scheduler_params
from .pipeline import StreamPipeline
from .scheduler import DecodeScheduler

log = logging.getLogger(__name__)


class SpeechService:
    def __init__(self, config: Config, recognizers: Sequence[Recognizer], emit: Callable[[TranscriptEvent], None],
                 clock: Callable[[], float] = time.monotonic):
        self._config = config
        self._emit = emit
        self._clock = clock
        self.recognizers = list(recognizers)
        self.scheduler = DecodeScheduler(self.recognizers, scheduler_params(config), clock)
        self.pipelines: dict[str, StreamPipeline] = {}
        self._started = False

    def pipeline(self, stream: str, config: Config | None = None) -> StreamPipeline:
        """A new pipeline for `stream` (replacing a stopped one of the same name after a reload)."""
        p = StreamPipeline(stream, pipeline_params(config or self._config), self.scheduler, self._emit, self._clock)
        self.pipelines[stream] = p
        return p

    def remove(self, stream: str) -> None:
        """The stream stopped (its pipeline was flushed); its queued finals still complete."""
        self.pipelines.pop(stream, None)

    def reconfigure(self, config: Config) -> None:
        """After a reload: new pipelines use `config`; queue limits apply at once.
        The number of decode workers changes only with a restart."""
        self._config = config
        self.scheduler.params = scheduler_params(config)

    def engine_info(self) -> EngineInfo:
        """Every decode worker's engine is the same model: the first one speaks for all."""
        return self.recognizers[0].info

    def heartbeats(self) -> list[Heartbeat]:
        return self.scheduler.heartbeats

    def drain(self, timeout: float) -> bool:
        """Daemon shutdown: decode and publish the queued finals, then stop."""
        self.stop(timeout)
        return self.scheduler.stats()["finals_pending"] == 0

    def start(self) -> None:
        if not self._started:
            self.scheduler.start()
            self._started = True

    def stop(self, timeout: float = 10.0) -> None:
        """Call after every pipeline is flushed: decodes queued finals, then stops."""
        self.scheduler.stop(drain_finals=True, timeout=timeout)
        st = self.stats()
        log.info("speech stopped: %s", st)

    def stats(self) -> dict[str, Any]:
        return {"scheduler": self.scheduler.stats(),
                "streams": {n: p.stats.as_dict() for n, p in self.pipelines.items()}}
