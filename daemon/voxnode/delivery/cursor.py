"""One durable output's view of the spool (voxnode.delivery.spool): the finals it has not delivered yet,
oldest first, and its acknowledgements. An output that has a cursor resends from it after a restart."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from voxnode.delivery.schema import SpooledMessage
    from voxnode.delivery.spool import Spool


class SpoolCursor:
    """One durable output's view of the spool: the finals it has not delivered, and its acknowledgements."""

    def __init__(self, spool: Spool, output: str):
        self.spool = spool
        self.output = output

    @property
    def count(self) -> int:
        return self.spool.pending(self.output)

    def after(self, seq: int, limit: int) -> list[SpooledMessage]:
        return self.spool.after(self.output, seq, limit)

    def get(self, seq: int) -> SpooledMessage | None:
        found = self.after(seq - 1, 1)
        return found[0] if found and found[0].seq == seq else None

    def ack(self, seqs: list[int]) -> None:
        self.spool.ack(self.output, seqs)
