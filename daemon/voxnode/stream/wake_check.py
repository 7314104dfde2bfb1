"""One stream's wake word waiting for the recogniser's check (wake/whisper_check.py) before it counts.

The pipeline (stream/pipeline.py) keeps the last LEAD_S of what the detector heard here. A detection of a
checked word opens the gate as any does, but provisionally: the frames after it are held here, not passed
on; TAIL_S later the audio around the word goes to the scheduler as a WAKE job (greedy, first in the
stream's turn). The decode thread only records the verdict; the stream's thread applies it at its next
frame (`verdict`): the word counts (its Wake word event, then the held frames go on to the segmenter, as
if they had just been heard), or it does not (they are dropped and the gate closes). So nothing of a word
Whisper did not hear is transcribed, and a command said right after a real one is held, never lost.
A check that fails in the engine, is skipped at shutdown, or is not answered within MAX_WAIT_S lets the
word count (`unchecked`): the detector alone decided before this existed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from voxnode.asr.recognizer import TranscriptResult
from voxnode.audio.format import PERIOD_S
from voxnode.wake import whisper_check
from voxnode.wake.models import WakeModel

from .jobs import DecodeJob, JobKind, JobOutcome, JobResult
from .segmenter import Chunk

log = logging.getLogger(__name__)

LEAD_FRAMES = round(whisper_check.LEAD_S / PERIOD_S)
TAIL_FRAMES = round(whisper_check.TAIL_S / PERIOD_S)


@dataclass
class Held:
    """A frame that passed the gate while the word waited: what the pipeline needs to pass it on later."""

    chunk: Chunk
    level_dbfs: float | None  # the frame's level for the speech levels, where it counts (speech over a floor)


@dataclass
class Pending:
    model: WakeModel
    probability: float
    t_wall: float  # the frame in which the word was detected
    audio: list[np.ndarray]  # what the detector heard: LEAD_S before the word, then the frames after it
    lead: int  # frames of `audio` up to the detection
    held: list[Held] = field(default_factory=list)
    submitted: float | None = None  # monotonic time of the check's submission
    text: str | None = None  # Whisper's text, once the check is done
    done: threading.Event = field(default_factory=threading.Event)
    counts: bool = False  # the verdict, once `done`
    unchecked: bool = False  # it counts without a check (failed, skipped, too late)


class WakeCheck:
    """Owned by the stream's pipeline and used under its lock; `_done` runs on a decode thread."""

    def __init__(self, stream: str, checked: frozenset[str], submit: Callable[[DecodeJob], None]):
        self.stream = stream
        self.checked = checked
        self._submit = submit
        self._heard: deque[np.ndarray] = deque(maxlen=LEAD_FRAMES)
        self.pending: Pending | None = None

    def hear(self, samples: np.ndarray) -> None:
        """Every frame the detector hears (int16), word or not: the audio a check starts from. The check
        goes out once TAIL_FRAMES are heard after the word (whether they pass the gate or not)."""
        p = self.pending
        if p is None:
            self._heard.append(np.array(samples, dtype=np.int16))
        elif p.submitted is None:
            p.audio.append(np.array(samples, dtype=np.int16))
            if len(p.audio) - p.lead >= TAIL_FRAMES:
                self.submit()

    def wants(self, model: WakeModel) -> bool:
        return model.name in self.checked

    def detected(self, model: WakeModel, probability: float, t_wall: float) -> None:
        """A checked word was detected in the frame just heard: hold what follows until it is checked."""
        self.pending = Pending(model, probability, t_wall, list(self._heard), len(self._heard))
        self._heard.clear()

    def hold(self, held: Held) -> None:
        """A frame past the gate while the word waits: passed on (or dropped) with the verdict."""
        assert self.pending is not None
        self.pending.held.append(held)

    def submit(self) -> None:
        """The check's decode, with the audio heard so far (at the end of a stream, maybe less tail)."""
        p = self.pending
        if p is None or p.submitted is not None:
            return
        p.submitted = time.monotonic()
        audio = np.concatenate(p.audio).astype(np.float32) / 32768.0
        self._submit(
            DecodeJob(
                self.stream,
                JobKind.WAKE,
                audio,
                self._done,
                tag=p,
                prompt="",
                hotwords=whisper_check.hotwords(p.model),
            )
        )

    def _done(self, job: DecodeJob, outcome: JobOutcome, result: JobResult) -> None:
        """On a decode thread: the verdict, applied by the stream's thread (`verdict`)."""
        p: Pending = job.tag
        if outcome == JobOutcome.DONE and isinstance(result, TranscriptResult):
            p.text = result.text
            p.counts = whisper_check.heard(result.text, p.model)
        else:
            p.counts = p.unchecked = True
        p.done.set()

    def verdict(self, now: float | None = None, end: bool = False) -> Pending | None:
        """The pending word once its check is decided (or too late: it counts unchecked); None before.
        `end`: the stream is over, a check not answered by now counts as too late. The stream's thread
        applies it; nothing is pending after this returns one."""
        p = self.pending
        if p is None or p.submitted is None:
            return None
        if not p.done.is_set():
            waited = (time.monotonic() if now is None else now) - p.submitted
            if waited < whisper_check.MAX_WAIT_S and not end:
                return None
            p.counts = p.unchecked = True
            log.warning(
                "stream %s: the check of wake word %s was not answered in %.1f s: it counts unchecked",
                self.stream,
                p.model.name,
                waited,
                extra={"STREAM": self.stream},
            )
        self.pending = None
        return p

    def wait(self, timeout: float) -> None:
        """At the end of a stream: the check sent now, with what was heard, and waited for (not under a lock)."""
        p = self.pending
        if p is not None:
            p.done.wait(timeout)
