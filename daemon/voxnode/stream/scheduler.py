"""Shares one recognition engine between many streams.

Which job starts next (finals first, round robin between tenants, Wyoming's work
after the microphones' finals without being starved): stream/policy.py. Here:
1. A stream never has more than one job running: a talkative stream cannot starve
   the others, whatever it submits.
2. A tenant with nothing queued or running is forgotten (policy.py, rule 2).
3. While any stream is in a pause that may be its endpoint (`hold_partials`),
   no new partial starts; a partial already running when a final or a
   speculative final has to wait for it gives the engine up at its next model
   call (`abandon`, ~10 ms) instead of delaying that final by its whole decode
   (measured live: 5 of 25 finals waited 90-370 ms for a partial with
   `vad.tail_ms` 100). So does a piece of background work (policy.py, rule 3)
   for a microphone's final, MAX_YIELDS times at most: it then runs again, first
   of its tenant. A
   speculative final still decoding when speech resumes (its text is void)
   gives the engine up the same way.
4. Back-pressure: a stream has at most one pending partial (a newer one
   replaces it, counted as skipped); a partial that waited longer than
   `partial_max_wait_s` is skipped; finals are never skipped.  Only if more
   than `max_pending_finals` are queued is one dropped, the oldest of the
   tenant with the most queued, and that is counted, logged and reported to
   its owner.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from voxnode.asr.recognizer import Recognizer, TranscriptResult
from voxnode.heartbeat import Heartbeat
from voxnode.lifecycle import Component
from voxnode.threads import NamedThread

from .jobs import (
    DecodeJob,
    JobKind,
    JobOutcome,
    SchedulerParams,
    SchedulerStats,
    decode,
    decode_line,
    percentiles,
)
from .policy import TIERS, Turns, give_way

log = logging.getLogger(__name__)


class DecodeScheduler(Component):
    def __init__(
        self,
        recognizers: Sequence[Recognizer],
        params: SchedulerParams,
        clock: Callable[[], float] = time.monotonic,
        on_decoded: Callable[[str, str, float], None] | None = None,
    ):
        # Worker i uses engine i % len: parallel decoding needs an engine per worker (docs/benchmarks.md).
        if not recognizers:
            raise ValueError("the decode scheduler needs at least one recognizer")
        self._recs = list(recognizers)
        self.params = params
        # (stream, kind, engine seconds) after every decode, on the decode thread: the health
        # reporter's decode-time histogram. Must not block.
        self._on_decoded = on_decoded
        self._clock = clock
        self._cv = threading.Condition()
        # class -> tenant -> its jobs of that class, oldest first; a tenant with none has no entry.
        self._queues: dict[JobKind, dict[str, deque[DecodeJob]]] = {k: {} for k in JobKind}
        # Whose turn it is; knows only tenants with a job queued or running.
        self._turns = Turns()
        self._running: dict[str, DecodeJob] = {}  # stream -> its job on a worker
        self._holds: set[str] = set()
        self._serial = itertools.count()
        self._threads: list[threading.Thread] = []
        # One per worker, for the watchdog: a decode that never returns is a stuck engine.
        self.heartbeats = [Heartbeat(f"decode-{i}") for i in range(params.workers)]
        self._stopping = False
        self._stats = SchedulerStats()
        # Recent (wait, run) seconds per job kind: queueing delay is the back-pressure signal.
        self._timings: dict[JobKind, deque[tuple[float, float]]] = {k: deque(maxlen=500) for k in JobKind}

    # ---- owner side -------------------------------------------------------------
    def submit(self, job: DecodeJob) -> None:
        evicted: list[tuple[DecodeJob, JobOutcome]] = []
        with self._cv:
            if self._stopping:  # e.g. a request's next piece, submitted as its last one finished
                evicted.append((job, JobOutcome.DROPPED if job.kind == JobKind.FINAL else JobOutcome.SKIPPED))
            else:
                evicted += self._queue(job)
        self._report(evicted)

    def _queue(self, job: DecodeJob) -> list[tuple[DecodeJob, JobOutcome]]:
        """Under the lock."""
        evicted: list[tuple[DecodeJob, JobOutcome]] = []
        job.submitted = self._clock()
        job.seq = next(self._serial)
        q = self._queues[job.kind].setdefault(job.turn, deque())
        if job.kind in (JobKind.PARTIAL, JobKind.SPECULATIVE):
            # Only the newest partial/speculation of a stream is worth doing.
            for old in [j for j in q if j.stream == job.stream]:
                q.remove(old)
                evicted.append((old, JobOutcome.SKIPPED if old.kind == JobKind.PARTIAL else JobOutcome.CANCELLED))
        q.append(job)
        self._stats.submitted[job.kind.name] += 1
        if job.kind == JobKind.FINAL:
            evicted += self._enforce_final_limit()
        if job.kind != JobKind.PARTIAL:
            log.debug("stream %s: %s queued", job.stream, job.kind.name)
            self._make_room()
        self._update_depth()
        self._cv.notify()
        return evicted

    def _make_room(self) -> None:
        """Finals and speculative finals waiting: the jobs in their way give the engine up at their
        next model call (policy.give_way). Under the lock."""
        # Each stream's oldest waiting job of each kind, finals first.
        waiting = [
            list({j.stream: j for q in self._queues[kind].values() for j in reversed(q)}.values())
            for kind in (JobKind.WAKE, JobKind.FINAL, JobKind.SPECULATIVE)
        ]
        for job in give_way(self._running, len(self.heartbeats) - len(self._running), waiting):
            job.abandon.set()

    def _enforce_final_limit(self) -> list[tuple[DecodeJob, JobOutcome]]:
        if self._pending_finals() <= self.params.max_pending_finals:
            return []
        # The oldest of the tenant with the most queued: 256 Wyoming clients cannot push out a microphone's.
        longest = max(len(q) for q in self._queues[JobKind.FINAL].values())
        pool = (j for q in self._queues[JobKind.FINAL].values() if len(q) == longest for j in q)
        oldest = min(pool, key=lambda j: j.seq)
        self._remove(oldest)
        return [(oldest, JobOutcome.DROPPED)]

    def _remove(self, job: DecodeJob, forget: bool = True) -> bool:
        """Take a queued job out of its queue; False if it is not queued. Under the lock."""
        queues = self._queues[job.kind]
        q = queues.get(job.turn)
        if q is None or job not in q:
            return False
        q.remove(job)
        if not q:
            del queues[job.turn]
        if forget:
            self._forget_if_idle(job.turn)
        return True

    def _forget_if_idle(self, tenant: str) -> None:
        """A tenant with nothing queued or running is forgotten: back later, it counts as never
        served, which is where an idle tenant belongs anyway. Under the lock."""
        if any(tenant in qs for qs in self._queues.values()) or any(j.turn == tenant for j in self._running.values()):
            return
        self._turns.forget(tenant)

    def _report(self, evicted: list[tuple[DecodeJob, JobOutcome]]) -> None:
        for old, outcome in evicted:
            self._account(old, outcome)
            old.on_done(old, outcome, None)

    def promote(self, job: DecodeJob) -> bool:
        """Turn a queued speculative job into a final (endpoint confirmed it)."""
        with self._cv:
            if self._running.get(job.stream) is job:
                job.kind = JobKind.FINAL  # already decoding: never given up now, and stop() waits for it
                return True
            if not self._remove(job, forget=False):  # its tenant keeps its turn
                return False
            job.kind = JobKind.FINAL
            self._queues[JobKind.FINAL].setdefault(job.turn, deque()).append(job)
            log.debug("stream %s: %s queued", job.stream, job.kind.name)
            evicted = self._enforce_final_limit()
            self._cv.notify()
        self._report(evicted)
        return True

    def hold_partials(self, stream: str, hold: bool) -> None:
        """A stream is about to submit a final: keep the engine free of new partials."""
        with self._cv:
            if hold:
                self._holds.add(stream)
            elif stream in self._holds:
                self._holds.discard(stream)
                self._cv.notify()

    def cancel(self, job: DecodeJob) -> None:
        """Withdraw a job; if it already runs, its result is reported as CANCELLED (a running
        speculative final stops at its next model call: its text is void)."""
        removed = False
        with self._cv:
            job.cancelled = True
            if self._remove(job):
                removed = True
                self._update_depth()
            elif job.kind == JobKind.SPECULATIVE and self._running.get(job.stream) is job:
                job.abandon.set()
        if removed:
            self._account(job, JobOutcome.CANCELLED)
            job.on_done(job, JobOutcome.CANCELLED, None)

    def stats(self) -> dict[str, Any]:
        with self._cv:
            now = self._clock()
            oldest = min((j.submitted for qs in self._queues.values() for q in qs.values() for j in q), default=now)
            timings = {k.name: percentiles(self._timings[k]) for k in JobKind if self._timings[k]}
            # params.workers follows a reload; the threads do not
            return self._stats.report(len(self.heartbeats), self._pending_finals(), (now - oldest) * 1e3, timings)

    # ---- lifecycle --------------------------------------------------------------
    def start(self) -> None:
        for i in range(self.params.workers):
            t = NamedThread(
                target=self._work,
                args=(self.heartbeats[i], self._recs[i % len(self._recs)]),
                name=f"decode-{i}",
                daemon=True,
            )
            t.start()
            self._threads.append(t)

    def stop(self, deadline: float, drain_finals: bool = True) -> None:
        """Stop the workers; by default queued and running finals are decoded first, by `deadline`
        (time.monotonic()). One still decoding then is reported DROPPED (counted, logged), never lost."""
        deadline = self._clock() + max(0.0, deadline - time.monotonic())  # on the scheduler's clock
        if drain_finals:
            with self._cv:
                while self._finals_in_flight() and self._clock() < deadline and self._threads:
                    self._cv.wait(0.05)
        with self._cv:
            self._stopping = True
            leftovers = [j for qs in self._queues.values() for d in qs.values() for j in d]
            for qs in self._queues.values():
                qs.clear()
            for tenant in self._turns.tenants():
                self._forget_if_idle(tenant)
            self._update_depth()
            self._cv.notify_all()
        for j in leftovers:
            outcome = JobOutcome.DROPPED if j.kind == JobKind.FINAL else JobOutcome.SKIPPED
            self._account(j, outcome)
            j.on_done(j, outcome, None)
        for t in self._threads:
            t.join(max(0.0, deadline - self._clock()) + 1.0)
        self._threads.clear()
        with self._cv:
            late = [j for j in self._running.values() if j.kind == JobKind.FINAL]
            for j in late:
                j.reported = True  # its worker, if it ever finishes, reports nothing more
        for j in late:
            self._account(j, JobOutcome.DROPPED)
            j.on_done(j, JobOutcome.DROPPED, None)

    # ---- worker side ------------------------------------------------------------
    def _pick(self, skipped: list[DecodeJob]) -> DecodeJob | None:
        now = self._clock()
        for tier in TIERS:
            if JobKind.PARTIAL in tier and self._holds:
                break
            while (job := self._next(tier)) is not None:
                self._remove(job)
                if job.kind == JobKind.PARTIAL and now - job.submitted > self.params.partial_max_wait_s:
                    skipped.append(job)  # stale: the speaker has moved on
                    continue
                self._turns.started(job)
                self._running[job.stream] = job
                self._update_depth()
                if job.kind != JobKind.PARTIAL:
                    log.debug(
                        "stream %s: %s starts, %.0f ms queued", job.stream, job.kind.name, 1e3 * (now - job.submitted)
                    )
                return job
        self._update_depth()
        return None

    def _next(self, tier: tuple[JobKind, ...]) -> DecodeJob | None:
        """policy.Turns' choice among each tenant's first job in this tier (by class, then oldest)
        whose stream has none running. Under the lock."""
        heads = []
        for tenant in dict.fromkeys(t for k in tier for t in self._queues[k]):
            mine = (j for k in tier for j in self._queues[k].get(tenant, ()))
            job = next((j for j in mine if j.stream not in self._running), None)
            if job is not None:
                heads.append(job)
        return self._turns.choose(tier, heads)

    def _work(self, heartbeat: Heartbeat, rec: Recognizer) -> None:
        while True:
            skipped: list[DecodeJob] = []
            with self._cv:
                while True:
                    job = None if self._stopping else self._pick(skipped)
                    if job is not None or skipped or self._stopping:
                        break
                    self._cv.wait()
                stopping = self._stopping and job is None
            for s in skipped:
                self._account(s, JobOutcome.SKIPPED)
                s.on_done(s, JobOutcome.SKIPPED, None)
            if job is not None:
                with heartbeat.busy():
                    self._run(job, rec)
            elif stopping:
                return

    def _run(self, job: DecodeJob, rec: Recognizer) -> None:
        job.started = self._clock()
        outcome, result, abandoned = decode(job, rec)  # a background piece that yielded runs again (below)
        job.finished = self._clock()
        if isinstance(result, TranscriptResult) and log.isEnabledFor(logging.DEBUG):
            log.debug("%s", decode_line(job, result))
        with self._cv:
            if job.reported:
                return  # reported DROPPED by stop(): it outlived the deadline
            self._running.pop(job.stream, None)
            self._stats.busy_s += job.finished - job.started
            if abandoned and job.kind == JobKind.FINAL and not job.cancelled:  # a background piece yielded
                if not self._stopping:  # it goes first in its tenant
                    job.yields += 1
                    job.abandon.clear()
                    self._queues[JobKind.FINAL].setdefault(job.turn, deque()).appendleft(job)
                    log.debug("stream %s: FINAL yields after %.0f ms", job.stream, 1e3 * (job.finished - job.started))
                    self._update_depth()
                    self._cv.notify_all()
                    return
                outcome = JobOutcome.DROPPED
            self._forget_if_idle(job.turn)
            if outcome == JobOutcome.SKIPPED:  # only an abandoned partial ends here as skipped
                self._stats.partials_abandoned += 1
            self._timings[job.kind].append((job.started - job.submitted, job.finished - job.started))
            if job.cancelled and outcome == JobOutcome.DONE:
                outcome = JobOutcome.CANCELLED
            self._cv.notify_all()
        if self._on_decoded is not None:
            try:
                self._on_decoded(job.observed_as or job.stream, job.kind.name.lower(), job.finished - job.started)
            except Exception:  # noqa: BLE001 - an observer must not cost a transcript
                log.exception("decode observer failed")
        self._account(job, outcome)
        job.on_done(job, outcome, result)

    def _account(self, job: DecodeJob, outcome: JobOutcome) -> None:
        with self._cv:
            self._stats.count(job.kind, outcome)
            if outcome == JobOutcome.DROPPED:
                n = self._pending_finals()
                log.warning("final for stream %s dropped: not decoded in time (%d finals pending)", job.stream, n)

    def _pending_finals(self) -> int:
        return sum(len(q) for q in self._queues[JobKind.FINAL].values())

    def _finals_in_flight(self) -> int:
        return self._pending_finals() + sum(j.kind == JobKind.FINAL for j in self._running.values())

    def _update_depth(self) -> None:
        depth = sum(len(q) for qs in self._queues.values() for q in qs.values())
        self._stats.queue_depth = depth
        self._stats.max_queue_depth = max(self._stats.max_queue_depth, depth)
