"""A worker's proof of progress, read by the watchdog.

A worker marks each unit of work (a frame, a decode job) with `with hb.busy():`.
Waiting for work is never "stuck", so a worker that idles on a queue or a
condition needs no timer of its own; a worker that has been busy with one unit
for longer than `service.worker_stall_s` is stuck, and the watchdog stops
pinging systemd.

One writer (the worker thread) and readers that only compare floats, so no lock:
a reader may see a value one unit old, which is fine at watchdog time scales.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager


class Heartbeat:
    def __init__(self, name: str, clock=time.monotonic):
        self.name = name
        self._clock = clock
        self.busy_since: float | None = None
        self.last_progress_mono: float = clock()
        self.units = 0

    def begin(self) -> None:
        self.busy_since = self._clock()

    def end(self) -> None:
        self.last_progress_mono = self._clock()
        self.units += 1
        self.busy_since = None

    @contextmanager
    def busy(self) -> Iterator[None]:
        self.begin()
        try:
            yield
        finally:
            self.end()

    def stuck_for(self, now: float) -> float:
        """Seconds the current unit of work has taken so far; 0 when idle."""
        since = self.busy_since
        return 0.0 if since is None else max(0.0, now - since)
