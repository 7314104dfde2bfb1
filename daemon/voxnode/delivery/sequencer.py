"""The one place transcripts pass on their way to the sinks: finals are recorded (given their durable
`seq`) first, so no sink ever shows a final that a crash could lose without a trace.

Recording costs an fsync, so it runs on this thread, not on the decode thread: the pipeline is never
blocked by the disk. Partials take the same queue, so a partial never overtakes the final before it.
Level reports and other diagnostics go to the sinks directly (nothing depends on their order).

The store is the spool's journal (voxnode.delivery.wiring), there whenever a durable output is
configured (stdout, MQTT, webhook); the daemon owns the sequencer as one of its components, started
after the outputs and stopped before them, so the last finals are stored and still reach every
output. Without a durable output (the log only) there is no spool, no seq and no sequencer, and
the daemon fans transcripts out directly.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

from voxnode.events import Event, TranscriptEvent
from voxnode.lifecycle import Component
from voxnode.threads import NamedThread

log = logging.getLogger(__name__)

QUEUE = 10000  # transcripts waiting for the disk (hours of speech); beyond it a final is refused, logged, counted
STOP_MIN_S = 2.0  # at least this long to store the finals decoded in the last moment (an fsync each)


class FinalStore(Protocol):
    def record(self, event: TranscriptEvent) -> TranscriptEvent:
        """Store a final durably; return it as the outputs must show it (with its seq)."""

    def refuse(self, event: TranscriptEvent) -> None:
        """A final the sequencer could not take (its queue full, or stopping): counted by the store's owner."""


class Sequencer(Component):
    def __init__(self, store: FinalStore, fan_out: Callable[[Event], None], limit: int = QUEUE):
        self._store = store
        self._fan_out = fan_out
        self._limit = limit
        self._queue: deque[TranscriptEvent] = deque()
        self._cond = threading.Condition()
        self._closing = False
        self.refused = 0  # finals not taken because the queue was full (the disk stalled for that long)
        self._thread = NamedThread(target=self._run, name="sequencer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def submit(self, event: TranscriptEvent) -> bool:
        """Any thread; never blocks. False (logged, counted) when the queue is full."""
        with self._cond:
            if len(self._queue) >= self._limit or self._closing:
                if event.is_final:
                    self.refused += 1
                    self._store.refuse(event)
                    log.error(
                        "transcript queue full (%d waiting for the spool's disk) or closing: final %s of "
                        "stream %s is dropped",
                        len(self._queue),
                        event.id,
                        event.stream,
                    )
                return False
            self._queue.append(event)
            self._cond.notify()
            return True

    @property
    def depth(self) -> int:
        return len(self._queue)

    def snapshot(self) -> dict:
        """For health reports: transcripts waiting for the spool's disk, finals the full queue refused."""
        return {"queue_depth": self.depth, "refused": self.refused}

    def stop(self, deadline: float) -> None:
        """Record and fan out what is queued by `deadline`, given at least STOP_MIN_S: finals still
        queued are stored and shown, so a power cut after the stop loses none that were shown."""
        with self._cond:
            self._closing = True
            self._cond.notify()
        deadline = max(deadline, time.monotonic() + STOP_MIN_S)
        self._thread.join(max(0.0, deadline - time.monotonic()))
        if self._thread.is_alive():
            log.error("%d transcript(s) not written by the stop deadline are lost", len(self._queue))

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closing:
                    self._cond.wait()
                if not self._queue:
                    return
                event = self._queue.popleft()
            if event.is_final:
                try:
                    event = self._store.record(event)
                except Exception:  # noqa: BLE001 - a bug here must not stop later finals
                    log.exception("recording final %s failed; it goes out without a seq", event.id)
                    event = replace(event, seq=None, recorded=True)
            try:
                self._fan_out(event)
            except Exception:  # noqa: BLE001
                log.exception("an output failed on %s %s", event.type, event.id)
