"""All streams of the process around one shared engine.

The daemon creates one SpeechService, asks it for a StreamPipeline per
stream, feeds each pipeline from its stream's consumer thread, and stops the
service last so queued finals are still decoded and published.
"""
from __future__ import annotations

import logging
import time
from typing import Any, Callable

from voxnode.config import Config
from voxnode.events import TranscriptEvent

from .params import pipeline_params, scheduler_params
from .pipeline import StreamPipeline
from .scheduler import DecodeScheduler, Recognizer

log = logging.getLogger(__name__)


class SpeechService:
    def __init__(self, config: Config, recognizer: Recognizer, emit: Callable[[TranscriptEvent], None],
                 clock: Callable[[], float] = time.monotonic):
        self._config = config
        self._emit = emit
        self._clock = clock
        self.scheduler = DecodeScheduler(recognizer, scheduler_params(config), clock)
        self.pipelines: dict[str, StreamPipeline] = {}
        self._started = False

    def pipeline(self, stream: str) -> StreamPipeline:
        if stream in self.pipelines:
            raise ValueError(f"stream {stream!r} already has a pipeline")
        p = StreamPipeline(stream, pipeline_params(self._config), self.scheduler, self._emit, self._clock)
        self.pipelines[stream] = p
        return p

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
                "streams": {n: vars(p.stats).copy() for n, p in self.pipelines.items()}}
