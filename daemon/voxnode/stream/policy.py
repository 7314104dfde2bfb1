"""Whose turn it is: which queued job the decode scheduler (stream/scheduler.py) starts next.

1. Classes, in tiers: finals and speculative finals before partials (a partial is only useful
   while it is fresh; a final is the product). Within a tenant, a wake word's check first (the session
   waits on it: stream/wake_check.py), then finals, then speculative finals;
   between tenants a speculative final (a microphone's final decoded in the pause, before the
   endpoint confirms it) takes its tenant's turn as a final does. Issue 27 probe (8 Wyoming
   clients uploading 29 s requests back to back, one microphone): with every final before every
   speculative final, the microphone's speculation waited behind the queued requests, its final
   started at the endpoint, and end of speech -> final was p95 1.49 s; sharing turns, 1.16 s.
2. Round robin between tenants: the tenant served least recently goes first (one never served,
   or idle since, before any other), and within a tenant its oldest job. A microphone is its own
   tenant; every Wyoming request shares one (`DecodeJob.tenant`). A tenant with nothing queued or
   running is forgotten: nothing is kept per finished request (before: a key per request, each
   "never served", put 8 clients' requests ahead of a microphone's finals for 18-126 s, and
   20,000 requests left 20,000 entries behind).
3. Background work yields (`DecodeJob.background`: Wyoming requests, which wyoming_stt/slices.py
   also cuts into pieces of at most ~8 s, one job each). In the finals' tier a background job
   starts only when no microphone's final or speculative final is waiting, or when
   MAX_PASSED_OVER of them have started in a row while one waited: Wyoming is never starved.
   A piece decoding when a microphone's final comes gives the engine up at its next model call
   and runs again first (at most MAX_YIELDS times), so a microphone's final waits for one
   decoder step, or for one piece of at most ~8 s once that piece has yielded. Round robin alone
   (rule 2) let a microphone's final wait for one whole request: on a host where a 29 s request
   costs 6.5 s of engine time, end of speech -> final was p95 54 s (docs/reliability.md). Partials
   keep plain round robin: they give the engine up to any final anyway (scheduler.py, rule 3).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence

from .jobs import DecodeJob, JobKind

TIERS = ((JobKind.WAKE, JobKind.FINAL, JobKind.SPECULATIVE), (JobKind.PARTIAL,))
FINALS = TIERS[0]
# Rule 3. Each microphone has at most a final and a speculative final queued, and a node has a
# handful of microphones: 4 lets four microphones ending an utterance at once all go before a
# waiting request's piece, and still gives Wyoming one turn in five while the microphones are
# busy without a pause.
MAX_PASSED_OVER = 4
# Rule 3: a piece decoding when a microphone's final comes gives the engine up (scheduler.py) and
# runs again, at most this many times; then it runs to its end, so every request finishes, having
# cost at most 1 + MAX_YIELDS times its engine time. Probe at load 8-10 (docs/reliability.md): with
# one yield, 10 of the microphone's 15 waits over 1 s were behind a piece, one of them a piece
# running again after its yield (2.8 s). A piece yields only between model calls, so a final
# still waits for the encoder pass under way (an 8-9 s window: 1.7-3.6 s at load 10 there).
MAX_YIELDS = 3


class Turns:
    """The tenants' turns. Not thread-safe: the scheduler calls it under its lock."""

    def __init__(self) -> None:
        self._last_served: dict[str, int] = {}  # tenant -> when last served (a count)
        self._served = itertools.count(1)
        self.passed_over = 0  # foreground finals started in a row while a background one waited

    def choose(self, tier: tuple[JobKind, ...], heads: Iterable[DecodeJob]) -> DecodeJob | None:
        """The job to start among `heads` (each tenant's first job in `tier` that can start); a job
        chosen in the finals' tier always starts (only a stale partial is skipped)."""
        jobs = list(heads)
        back = [j for j in jobs if j.background] if tier == FINALS else []
        if back:
            fore = [j for j in jobs if not j.background]
            jobs = fore if fore and self.passed_over < MAX_PASSED_OVER else back
        if not jobs:
            return None
        job = min(jobs, key=lambda j: (self._last_served.get(j.turn, 0), j.seq))
        if back:
            self.passed_over = 0 if job.background else self.passed_over + 1
        return job

    def started(self, job: DecodeJob) -> None:
        self._last_served[job.turn] = next(self._served)

    def forget(self, tenant: str) -> None:
        self._last_served.pop(tenant, None)

    def tenants(self) -> list[str]:
        return list(self._last_served)


def give_way(running: Mapping[str, DecodeJob], idle: int, waiting: Sequence[Sequence[DecodeJob]]) -> list[DecodeJob]:
    """The running jobs (by stream) that give the engine up at their next model call, for the jobs
    `waiting` (each stream's oldest queued final, then each one's oldest speculative final) with
    `idle` workers free. A partial gives way to any of them: it is a preview replaced a moment
    later, and a final delayed by a whole partial decode is latency every user sees (a stream's own
    partial always: a stream runs one job at a time). A piece of background work gives way to a
    microphone's, MAX_YIELDS times at most (rule 3). The oldest in the way first."""
    partials = [j for j in running.values() if j.kind == JobKind.PARTIAL and not j.abandon.is_set()]
    pieces = [j for j in running.values() if j.background and j.yields < MAX_YIELDS and not j.abandon.is_set()]
    out: list[DecodeJob] = []
    for jobs in waiting:
        for job in jobs:
            own = running.get(job.stream)
            if own is not None:
                if own in partials:
                    out.append(own)
                    partials.remove(own)
            elif idle > 0:
                idle -= 1
            elif partials or (pieces and not job.background):
                victims = partials or pieces
                oldest = min(victims, key=lambda j: j.started)
                out.append(oldest)
                victims.remove(oldest)
    return out
