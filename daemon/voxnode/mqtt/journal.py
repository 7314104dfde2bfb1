"""Finals get their `seq` here, by being stored in the spool, before any sink sees them.

The daemon's sequencer calls `record` for each final, then hands the returned
event (with `seq` and `model`) to every sink: stdout, the log and MQTT print
and publish the same seq, and a final is printed only once it is on disk. A
final the spool cannot store gets `"seq": null` (never a reused number: a
consumer that drops repeated seqs would silently lose it) and is published from
memory; `Spool.error` says why, in the log and in health.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable

from voxnode.mqtt.spool import Spool
from voxnode.mqtt.topics import Topics

log = logging.getLogger("voxnode.mqtt")


def dumps(obj: dict) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


class FinalsJournal:
    """The daemon's `FinalStore` (voxnode.sequencer), provided by the MQTT bridge."""

    def __init__(self, spool: Spool, topics: Topics, model_name: Callable[[], str]):
        self.spool = spool
        self.topics = topics
        self._model_name = model_name
        self.refused = 0  # finals the sequencer could not queue for the spool (health mqtt.finals_refused)

    def refuse(self, event: dict) -> None:
        """A final the sequencer could not queue (its queue full, or stopping): never stored nor shown."""
        self.refused += 1

    def record(self, event: dict) -> dict:
        """Store one final; returns it as every sink must show it: with `seq` (None if not stored) and `model`."""
        model = event.get("model") or self._model_name()

        def published(seq: int | None) -> dict:
            out = {**event, "seq": seq}
            out["model"] = model
            return out

        seq, dropped = self.spool.append(self.topics.transcript(event["stream"]), lambda s: dumps(published(s)))
        if dropped:
            log.error(
                "MQTT spool full (%d finals): dropped the %d oldest unsent final(s), seq %d..%d "
                "(%d dropped in total); raise mqtt.spool_max_messages or fix the broker link",
                self.spool.max_messages,
                len(dropped),
                dropped[0],
                dropped[-1],
                self.spool.dropped_total,
            )
        if seq is None:
            log.warning(
                "MQTT: final %s of stream %s has no durable copy and no seq (the spool cannot store it: "
                "see the error above); published from memory",
                event.get("id"),
                event.get("stream"),
                extra={"STREAM": str(event.get("stream")), "UTTERANCE_ID": str(event.get("id"))},
            )
        return published(seq)
