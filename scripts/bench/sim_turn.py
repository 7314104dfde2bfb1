"""The end-of-turn model in simulated time, for scripts/bench/sim_live.py.

What the pipeline uses of stream/turn.py's TurnDetector (`submit`, `cancel`), on its own thread as
in the daemon: the real model (TurnModel, one thread) answers each request, and the answer is
delivered when the simulated clock passes the moment its call would end (the call starts when the
request is made or when the previous call ends, and lasts the model's measured CPU time). So the
pause's rules see the model's answer before, or after, the speculative decode's as they would live
with one decode worker and an idle second core.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from voxnode.stream.turn import TurnModel, TurnRequest


@dataclass
class _Call:
    start: float
    end: float
    request: TurnRequest
    prob: float


class SimTurn:
    def __init__(self, model: TurnModel, clock, scale: float = 1.0) -> None:
        self.model = model
        self.scale = scale  # a call lasts its CPU time here times this (a slower board)
        self.clock = clock  # sim_live.SimClock: .now, simulated seconds
        self.calls: list[_Call] = []  # made, not yet delivered, in order
        self.free_at = 0.0
        self.count = 0
        self.busy_s = 0.0

    def submit(self, request: TurnRequest) -> None:
        # A newer pause of the stream replaces its request still waiting (TurnDetector.submit).
        self.cancel(request.stream)
        t0 = time.thread_time()
        prob = self.model(request.audio)
        run = (time.thread_time() - t0) * self.scale
        start = max(self.free_at, self.clock.now)
        self.free_at = start + run
        self.calls.append(_Call(start, start + run, request, prob))
        self.count += 1
        self.busy_s += run

    def cancel(self, stream: str) -> None:
        """A request not yet started is dropped; one running still reports (TurnDetector.cancel)."""
        now = self.clock.now
        dropped = [c for c in self.calls if c.request.stream == stream and c.start > now]
        for c in dropped:
            self.calls.remove(c)
            self.busy_s -= c.end - c.start
        if dropped:
            self.free_at = max([now] + [c.end for c in self.calls])

    def next_at(self) -> float | None:
        return self.calls[0].end if self.calls else None

    def deliver(self, now: float) -> None:
        """Every answer whose call ended by `now`, at its own time on the clock."""
        while self.calls and self.calls[0].end <= now:
            c = self.calls.pop(0)
            saved, self.clock.now = self.clock.now, c.end
            c.request.on_done(c.request, c.prob)
            self.clock.now = saved
