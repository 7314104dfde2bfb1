"""On whenever a durable output (stdout, MQTT, webhook) is configured: the spool opened for those
outputs, a cursor for each, the journal that gives finals their seq and the sequencer that stores
each final before any output sees it.

`Delivery` is the component that owns the spool: the daemon starts it before the outputs and
stops it after them (it closes the spool once no output reads it); the sequencer is started after
the outputs and stopped before them, so the last finals are stored and still reach every output.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from voxnode.config.delivery import DeliveryConfig
from voxnode.delivery.cursor import SpoolCursor
from voxnode.delivery.journal import FinalsJournal
from voxnode.delivery.schema import default_spool_path
from voxnode.delivery.sequencer import Sequencer
from voxnode.delivery.spool import Spool
from voxnode.events import Event
from voxnode.lifecycle import Component

log = logging.getLogger(__name__)


class Delivery(Component):
    def __init__(
        self,
        config: DeliveryConfig,
        outputs: Sequence[str],
        model_name: Callable[[], str],
        fan_out: Callable[[Event], None],
    ):
        self.spool = Spool(config.spool_path or default_spool_path(), config.spool_max_messages, outputs)
        self.journal = FinalsJournal(self.spool, model_name)
        self.sequencer = Sequencer(self.journal, fan_out)

    def cursor(self, output: str) -> SpoolCursor:
        return self.spool.cursor(output)

    def start(self) -> None:
        """The spool was opened when built (its errors and counts are known before anything starts)."""

    def stop(self, deadline: float) -> None:
        """After every output has stopped: what they have not delivered stays for the next start."""
        for output in self.spool.outputs:
            left = self.spool.pending(output)
            if left:
                log.warning(
                    "%s: %d final(s) not yet acknowledged stay in %s and are sent after the next start",
                    output,
                    left,
                    self.spool.path,
                )
        self.spool.close()

    def health(self) -> dict:
        s = self.spool
        return {
            "spool_messages": s.count,
            "spool_bytes": s.size_bytes(),
            "spool_writable": s.writable,
            "spool_error": s.error,
            "spool_dropped_total": s.dropped_total,
            "unstored": s.unstored,
            "finals_refused": s.refused,
            "pending": {o: s.pending(o) for o in s.outputs},
            "next_seq": s.next_seq,
        }
