"""What the decode scheduler (stream/scheduler.py) is handed, what it reports back, and its counters."""

from __future__ import annotations

import enum
import logging
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from voxnode.asr.recognizer import DecodeAbandoned, Recognizer, TranscriptResult

log = logging.getLogger("voxnode.stream.scheduler")  # the scheduler's: a decode's failure is its to report


class JobKind(enum.IntEnum):
    FINAL = 0
    SPECULATIVE = 1
    PARTIAL = 2
    # A detected wake word heard by the recogniser before it counts (wake/whisper_check.py): greedy, as a
    # partial, but never skipped or given up, and first in its stream's turn (the session waits on it).
    WAKE = 3


class JobOutcome(enum.Enum):
    DONE = "done"
    FAILED = "failed"  # the engine raised
    SKIPPED = "skipped"  # partial dropped under back-pressure or replaced
    DROPPED = "dropped"  # final dropped: queue overflow (counted and logged)
    CANCELLED = "cancelled"  # owner withdrew it (speech resumed, utterance discarded)


# What a finished job reports: the transcript (DONE), the engine's exception (FAILED), else None.
JobResult = TranscriptResult | Exception | None


@dataclass(eq=False)
class DecodeJob:
    stream: str
    kind: JobKind
    audio: np.ndarray
    on_done: Callable[[DecodeJob, JobOutcome, JobResult], None]
    tag: Any = None  # owner's bookkeeping (utterance id, pause id, ...)
    prompt: str | None = None  # the stream's recognition prompt; None = the recognizer's own
    hotwords: tuple[str, ...] | None = None  # the stream's hotwords; None = the recognizer's own
    language: str | None = None  # a Wyoming client's language (a code); None = the recognizer's ([asr])
    # Tokens the text probably starts with (the utterance's previous hypothesis): verified in one
    # decoder call, decoding goes on from the first disagreement (Recognizer.transcribe's `draft`).
    draft: tuple[int, ...] = ()
    # The `stream` the decode-time observer is told ("" = `stream`): owners whose keys come and go
    # (one per Wyoming request) share one, so the voxnode_decode_seconds series stay bounded.
    observed_as: str = ""
    # Whose turn this job is ("" = `stream`): the scheduler takes turns between tenants, not keys,
    # so owners whose keys come and go (one per Wyoming request) share one tenant and get one turn
    # between two of a microphone's, however many requests they have queued.
    tenant: str = ""
    # Work that yields to the microphones' finals (stream/policy.py, rule 3): Wyoming requests.
    background: bool = False
    yields: int = 0  # times this background job gave the engine up (policy.MAX_YIELDS at most)
    submitted: float = 0.0
    started: float = 0.0
    finished: float = 0.0
    cancelled: bool = False
    reported: bool = False  # a final still decoding when the scheduler stopped: reported DROPPED then
    seq: int = 0
    # Set by the scheduler when a final must not wait for this partial, or when this speculative
    # final was cancelled (speech resumed): the engine stops at its next model call.
    abandon: threading.Event = field(default_factory=threading.Event)

    @property
    def turn(self) -> str:
        """The tenant whose turn this job takes."""
        return self.tenant or self.stream


@dataclass(frozen=True)
class SchedulerParams:
    """Built from [stream] (stream/params.py), which holds the defaults."""

    workers: int
    max_pending_finals: int
    partial_max_wait_s: float


@dataclass
class SchedulerStats:
    submitted: dict[str, int] = field(default_factory=lambda: {k.name: 0 for k in JobKind})
    completed: dict[str, int] = field(default_factory=lambda: {k.name: 0 for k in JobKind})
    partials_skipped: int = 0
    partials_abandoned: int = 0  # stopped mid-decode for a final (also counted as skipped)
    finals_dropped: int = 0
    failed: int = 0
    cancelled: int = 0
    queue_depth: int = 0
    max_queue_depth: int = 0
    busy_s: float = 0.0

    def report(self, workers: int, finals_pending: int, oldest_wait_ms: float, timings: dict) -> dict[str, Any]:
        """The scheduler's health section."""
        return {
            "workers": workers,
            "queue_depth": self.queue_depth,
            "max_queue_depth": self.max_queue_depth,
            "finals_pending": finals_pending,
            "oldest_wait_ms": round(oldest_wait_ms, 1),
            "submitted": dict(self.submitted),
            "completed": dict(self.completed),
            "partials_skipped": self.partials_skipped,
            "partials_abandoned": self.partials_abandoned,
            "finals_dropped": self.finals_dropped,
            "failed": self.failed,
            "cancelled": self.cancelled,
            "busy_s": round(self.busy_s, 3),
            "timings_ms": timings,
        }

    def count(self, kind: JobKind, outcome: JobOutcome) -> None:
        if outcome == JobOutcome.DONE:
            self.completed[kind.name] += 1
        elif outcome == JobOutcome.SKIPPED:
            self.partials_skipped += 1
        elif outcome == JobOutcome.DROPPED:
            self.finals_dropped += 1
        elif outcome == JobOutcome.FAILED:
            self.failed += 1
        elif outcome == JobOutcome.CANCELLED:
            self.cancelled += 1


def percentiles(samples: deque[tuple[float, float]]) -> dict[str, float]:
    waits = np.array([w for w, _ in samples]) * 1e3
    runs = np.array([r for _, r in samples]) * 1e3
    return {
        "wait_p50": round(float(np.percentile(waits, 50)), 1),
        "wait_p95": round(float(np.percentile(waits, 95)), 1),
        "run_p50": round(float(np.percentile(runs, 50)), 1),
        "run_p95": round(float(np.percentile(runs, 95)), 1),
    }


def decode_line(job: DecodeJob, result: TranscriptResult) -> str:
    """Where a slow decode's time went (the scheduler's debug log): a window retry (a loop in the
    short window) or a temperature fallback shows here, and how much of a draft was taken: a final's
    beam searches only the tail after it, so the same audio can give another text with another draft
    (docs/asr.md, "Drafts"; stop 45 had to patch the daemon to see it)."""
    return (
        f"stream {job.stream}: {job.kind.name.lower()} decode {1e3 * (job.finished - job.started):.0f} ms "
        f"(encode {result.encode_ms:.0f}, decode {result.decode_ms:.0f}; {result.duration_s:.1f} s audio "
        f"in a {result.window_s:.0f} s window"
        + (f", draft {result.draft_accepted} of {result.draft_tokens} tokens taken" if result.draft_tokens else "")
        + (f", temperature {result.temperature:.1f})" if result.temperature else ")")
    )


def decode(job: DecodeJob, rec: Recognizer) -> tuple[JobOutcome, JobResult, bool]:
    """Run `job` on `rec` (a decode thread): its outcome and result, and whether it gave the engine up
    (`abandon`, set by the scheduler): a partial giving way to a final is skipped, a speculative final
    voided by speech resuming was cancelled, a piece of background work that yielded is for the
    scheduler to run again. A final is never given up; a speculative final promoted while it runs
    gets the full decode."""
    partial = job.kind == JobKind.PARTIAL
    greedy = partial or job.kind == JobKind.WAKE
    # Only when asked: recognizers that predate these arguments (test doubles) still work.
    asked: dict[str, Any] = {}
    if job.language is not None:
        asked["language"] = job.language
    if job.draft:
        asked["draft"] = job.draft
    try:
        result = rec.transcribe(
            job.audio,
            role="partial" if greedy else "final",
            prompt=job.prompt,
            hotwords=job.hotwords,
            abandon=None if job.kind in (JobKind.FINAL, JobKind.WAKE) and not job.background else job.abandon,
            **asked,
        )
    except DecodeAbandoned:
        return (JobOutcome.SKIPPED if partial else JobOutcome.CANCELLED), None, True
    except Exception as exc:  # engine errors must not kill the worker
        log.exception("decode failed for stream %s (%s)", job.stream, job.kind.name)
        return JobOutcome.FAILED, exc, False
    return JobOutcome.DONE, result, False
