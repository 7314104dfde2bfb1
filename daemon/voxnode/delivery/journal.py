"""Finals get their `seq` here, by being stored in the spool, before any sink sees them.

The daemon's sequencer calls `record` for each final, then hands the returned
event (with `seq` and `model`) to every output: stdout, the log, MQTT and the
webhook show the same seq, and a final is shown only once it is on disk. A
final the spool cannot store gets `"seq": null` (never a reused number: a
consumer that drops repeated seqs would silently lose it) and is delivered from
memory; `Spool.error` says why, in the log and in health.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace

from voxnode.delivery.spool import Spool
from voxnode.events import TranscriptEvent, dumps

log = logging.getLogger("voxnode.delivery")


class FinalsJournal:
    """The daemon's `FinalStore` (voxnode.delivery.sequencer)."""

    def __init__(self, spool: Spool, model_name: Callable[[], str]):
        self.spool = spool
        self._model_name = model_name

    def refuse(self, event: TranscriptEvent) -> None:
        """A final the sequencer could not queue (its queue full, or stopping): never stored nor shown."""
        self.spool.refused += 1

    def record(self, event: TranscriptEvent) -> TranscriptEvent:
        """Store one final; returns it as every output must show it: with `seq` (None if not stored) and `model`."""
        model = event.model or self._model_name()

        def published(seq: int | None) -> TranscriptEvent:
            return replace(event, seq=seq, model=model, recorded=True)

        seq, dropped = self.spool.append(event.stream, lambda s: dumps(published(s).as_dict()))
        if dropped:
            log.error(
                "spool full (%d finals): dropped the %d oldest unsent final(s), seq %d..%d "
                "(%d dropped in total); raise delivery.spool_max_messages or fix the outputs' links",
                self.spool.max_messages,
                len(dropped),
                dropped[0],
                dropped[-1],
                self.spool.dropped_total,
            )
        if seq is None:
            log.warning(
                "final %s of stream %s has no durable copy and no seq (the spool cannot store it: "
                "see the error above); delivered from memory",
                event.id,
                event.stream,
                extra={"STREAM": event.stream, "UTTERANCE_ID": event.id},
            )
        return published(seq)
