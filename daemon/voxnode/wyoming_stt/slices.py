"""A Wyoming request's final, decoded in pieces so that a microphone's final never waits long for it.

The decode scheduler cannot stop a final halfway (stream/policy.py, rule 3): a microphone's final
that comes while a request decodes waits for what is decoding. Whole, a 29 s request held the
engine 6.5 s on the shared 2-core x86 development machine (12 s at load 6); the microphone's
end of speech -> final was p95 54 s there with 8 clients (docs/reliability.md, issue 27). So the
audio is cut at its pauses (asr/windows.split_at_pauses) into pieces of at most SLICE_S, decoded
one after another as background jobs of the Wyoming tenant, each piece reading the text of the
one before as its prompt (Whisper's own long-form decoding, condition_on_previous_text), and
joined. Smaller windows cost less in all: the encoder's attention grows with the square of the
window, and every decoder step attends to the whole window.

Measured on 8 probe-like requests (25-29 s of pocketsphinx-testdata and Asterisk prompts, tiny.en,
beam 3; /tmp measurement at load 5-7, figures in docs/reliability.md): whole 96 s of engine time,
WER 4.3 %, longest job 12.8 s; 8 s pieces without the prompt 64 s, WER 6.3 %; 8 s pieces each
prompted by the one before 76 s, WER 3.8 %, longest job 4.9 s.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from voxnode import text as script
from voxnode.asr.recognizer import TranscriptResult
from voxnode.asr.windows import split_at_pauses
from voxnode.audio.format import SAMPLE_RATE
from voxnode.stream.jobs import DecodeJob, JobOutcome, JobResult
from voxnode.stream.scheduler import DecodeScheduler

SLICE_S = 8.0  # the longest piece (see the module's docstring)
SEARCH_S = 4.0  # where to look for the pause: the last 4 s before the limit
# Whisper keeps the last 223 tokens of a prompt; the text of the piece before is a few dozen.


@dataclass
class Decoded:
    """The pieces' results, once all are decoded (or one was not)."""

    outcome: JobOutcome
    results: list[TranscriptResult] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)  # per piece, as published; "" where nothing was said
    error: JobResult = None  # the engine's exception, where it raised
    audio_s: float = 0.0
    decode_s: float = 0.0  # engine time, all pieces
    wait_s: float = 0.0  # queued, all pieces

    @property
    def text(self) -> str:
        return script.join([t for t in self.texts if t])


class SlicedFinal:
    """Decodes one request's audio piece by piece through the scheduler, then calls `on_done` (on a
    decode thread, once). `text(result)`: a piece's text as published, "" for noise or silence (the
    microphones' rule: stream/speech_text.py)."""

    def __init__(
        self,
        scheduler: DecodeScheduler,
        job: Callable[[np.ndarray, str | None, str | None, Callable], DecodeJob],
        audio: np.ndarray,
        prompt: str,
        text: Callable[[TranscriptResult], str],
        on_done: Callable[[Decoded], None],
    ):
        self._sched = scheduler
        self._job = job  # (audio, prompt, language, on_done) -> the piece's job
        self._audio = audio
        self._spans = split_at_pauses(audio, SLICE_S, SEARCH_S)
        self._prompt = prompt  # [asr] prompt: what every piece reads first
        self._text = text
        self._on_done = on_done
        self._decoded = Decoded(JobOutcome.DONE, audio_s=audio.size / SAMPLE_RATE)
        self._lock = threading.Lock()
        self._current: DecodeJob | None = None
        self._cancelled = False

    @property
    def pieces(self) -> int:
        return len(self._spans)

    def start(self) -> None:
        self._submit(0, None)

    def cancel(self) -> None:
        """The client went away: the piece queued is withdrawn, none is submitted after it."""
        with self._lock:
            self._cancelled = True
            job = self._current
        if job is not None and not job.finished:
            self._sched.cancel(job)

    def _submit(self, i: int, language: str | None) -> None:
        start, end = self._spans[i]
        before = next((t for t in reversed(self._decoded.texts) if t), "")
        prompt = " ".join(p for p in (self._prompt, before) if p) or None
        job = self._job(self._audio[start:end], prompt, language, self._piece_done)
        job.tag = i
        with self._lock:
            if self._cancelled:
                return
            self._current = job
        self._sched.submit(job)

    def _piece_done(self, job: DecodeJob, outcome: JobOutcome, result: JobResult) -> None:  # decode thread
        d = self._decoded
        if job.started:
            d.decode_s += job.finished - job.started
            d.wait_s += job.started - job.submitted
        if outcome != JobOutcome.DONE or not isinstance(result, TranscriptResult):
            d.outcome, d.error = (outcome if outcome != JobOutcome.DONE else JobOutcome.FAILED), result
            self._on_done(d)
            return
        d.results.append(result)
        d.texts.append(self._text(result))
        i = int(job.tag) + 1
        if i < len(self._spans):
            # An "auto" request's language is detected once, by the first piece, and kept.
            self._submit(i, job.language or (result.language if result.language_prob is not None else None))
        else:
            self._on_done(d)
