"""A bounded hand-off from many producer threads to the one publisher thread.

Producers never block: `put` refuses (returns False) when the kind's bound is
reached, so a dead network can never stall the pipeline. Control messages from
the paho thread (acks, connects) have no bound: losing an ack would stall the
spool, and there is at most one per in-flight message.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any


class Mailbox:
    def __init__(self, limits: dict[str, int]):
        self._limits = limits
        self._counts: dict[str, int] = {k: 0 for k in limits}
        self._items: deque[tuple[str, Any]] = deque()
        self._cond = threading.Condition()

    def put(self, kind: str, item: Any = None) -> bool:
        with self._cond:
            limit = self._limits.get(kind)
            if limit is not None:
                if self._counts[kind] >= limit:
                    return False
                self._counts[kind] += 1
            self._items.append((kind, item))
            self._cond.notify()
            return True

    def take_all(self, timeout: float) -> list[tuple[str, Any]]:
        with self._cond:
            if not self._items:
                self._cond.wait(timeout)
            items = list(self._items)
            self._items.clear()
            for k in self._counts:
                self._counts[k] = 0
            return items

    def depth(self, kind: str | None = None) -> int:
        """Items waiting (of one bounded kind, if given)."""
        return len(self._items) if kind is None else self._counts[kind]
