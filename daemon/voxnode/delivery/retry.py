"""The oldest spooled final the broker refused (MQTT 5 reason code >= 128, e.g. 135 not authorised).

It stays in the spool and holds back the later ones, so finals still reach the broker in seq
order; it alone is retried, with backoff from mqtt.reconnect_min_s doubling to reconnect_max_s,
until the broker takes it. Fixing the ACL thus delivers everything without a restart. Used by
the publisher thread only.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class HeldFinal:
    def __init__(self, min_delay_s: float, max_delay_s: float, clock: Callable[[], float] = time.monotonic):
        self.seq: int | None = None  # the final holding back the later ones; None when nothing is held
        self.refusals = 0  # of `seq`, so far
        self._min_delay_s = min_delay_s
        self._max_delay_s = max_delay_s
        self._delay_s = min_delay_s
        self._clock = clock
        self.retry_at = 0.0

    def refused(self, seq: int) -> float | None:
        """The broker refused `seq`. If it is (now) the one held, returns the delay before it is tried
        again (and `refusals` counts this one); None for a later final, which just waits behind it."""
        if self.seq is None or seq < self.seq:
            self.seq = seq
            self.refusals = 0
        if seq != self.seq:
            return None
        self.refusals += 1
        delay = self._delay_s
        self.retry_at = self._clock() + delay
        self._delay_s = min(self._delay_s * 2, self._max_delay_s)
        return delay

    def accepted(self, seq: int) -> int | None:
        """The broker took `seq`: if it was the one held, the hold ends; returns its refusals."""
        if seq != self.seq:
            return None
        refusals = self.refusals
        self.seq, self.refusals = None, 0
        self._delay_s = self._min_delay_s
        return refusals

    def forget(self) -> None:
        """The held final left the spool another way (dropped by the spool bound): nothing to wait for."""
        self.seq = None

    def due(self) -> bool:
        return self._clock() >= self.retry_at

    def retry_in_s(self) -> float | None:
        """Seconds until the held final is tried again; None when nothing is held."""
        return None if self.seq is None else max(0.0, self.retry_at - self._clock())
