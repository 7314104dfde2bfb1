"""A lock that admits waiters in arrival order.

threading.Lock makes no ordering promise, so under load one stream could be
starved by others; a ticket lock serves transcription requests first come,
first served.
"""

from __future__ import annotations

import threading


class FifoLock:
    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._next_ticket = 0
        self._serving = 0

    def __enter__(self) -> FifoLock:
        with self._cond:
            ticket = self._next_ticket
            self._next_ticket += 1
            self._cond.wait_for(lambda: self._serving == ticket)
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def acquire_if_free(self) -> bool:
        """Take the lock now if no one holds or waits for it; False (not taken) otherwise."""
        with self._cond:
            if self._next_ticket != self._serving:
                return False
            self._next_ticket += 1
            return True

    def release(self) -> None:
        with self._cond:
            self._serving += 1
            self._cond.notify_all()

    @property
    def waiting(self) -> int:
        """Requests queued or running (for status reporting)."""
        with self._cond:
            return self._next_ticket - self._serving
