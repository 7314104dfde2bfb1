"""One utterance's recognition, as explicit states.

    OPEN ──pause──> PAUSED ──resume──> OPEN
      │               │
      └────end────────┴──> ENDED ──final──> DONE

OPEN: speech is going on; partials are decoded now and then. From `speculate_ms` of silence on, the
pause's speculative decode may already run (`early_job`): the pause adopts it, speech drops it.
PAUSED: a pause reached `tail_ms`; a speculative final is decoded over the speech so far
(`spec_job`; None again if that decode failed: the end then submits a fresh final). Its text,
and the end-of-turn model, are the evidence the pause's rules judge it on (stream/end_rules.py):
the first rule that decides is the pause's `verdict`.
ENDED: the segmenter ended the utterance (`ended_by`: the rule whose hangover ended the pause, or
the segmenter's own reason); its final is `final_job` (the speculation, when the pause it covered
is the one that ended the utterance).
DONE: the final is published, suppressed as noise, or lost; nothing more happens to it.
A discarded utterance (too little speech) is dropped from any state but DONE.

Only stream/utterances.py drives these transitions, under the pipeline's lock.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from voxnode.asr.recognizer import TranscriptResult

from .end_rules import Verdict
from .jobs import DecodeJob
from .partials import StablePrefix
from .segmenter import Utterance


class Phase(enum.Enum):
    OPEN = "open"
    PAUSED = "paused"
    ENDED = "ended"
    DONE = "done"


_NEXT = {
    Phase.OPEN: frozenset({Phase.PAUSED, Phase.ENDED}),
    Phase.PAUSED: frozenset({Phase.OPEN, Phase.PAUSED, Phase.ENDED}),
    Phase.ENDED: frozenset({Phase.DONE}),
    Phase.DONE: frozenset(),
}


class TransitionError(RuntimeError):
    """A transition the diagram above does not have: a bug in the pipeline, never the input."""


@dataclass
class UtteranceState:
    utt: Utterance
    last_partial_t: float
    wake_word: str | None = None  # the wake word that opened this utterance
    follow_up: bool | None = None  # with a wake word: heard in a follow-up window, not after the word
    speech_snr_db: float | None = None  # ENDED: its speech over the room's noise (stream/speech_levels.py)
    phase: Phase = Phase.OPEN
    prefix: StablePrefix = field(default_factory=StablePrefix)
    partial_job: DecodeJob | None = None
    spec_job: DecodeJob | None = None  # PAUSED (and ENDED, when it became the final)
    spec_result: TranscriptResult | None = None
    turn_asked: bool = False  # the end-of-turn model was asked about the current pause
    turn_prob: float | None = None  # ... and its P(finished), once back
    verdict: Verdict | None = None  # the current pause's rules' verdict, once applied
    final_job: DecodeJob | None = None
    ended_by: str = ""  # ENDED: a pause rule's name, or the segmenter's reason (max_length, flush)
    # OPEN, in silence before tail_ms (vad.speculate_ms): the speculative decode started early, and its
    # result once back. The pause adopts it (`pause`) if no speech came between; speech drops it.
    early_job: DecodeJob | None = None
    early_result: TranscriptResult | None = None
    # The tokens of the latest hypothesis decoded for this utterance (a partial, or the speculative
    # decode of a pause speech resumed after): the next decode's draft (asr/search.verified_draft).
    draft: tuple[int, ...] = ()

    @property
    def ended(self) -> bool:
        return self.phase in (Phase.ENDED, Phase.DONE)

    @property
    def done(self) -> bool:
        return self.phase == Phase.DONE

    def _go(self, phase: Phase) -> None:
        if phase not in _NEXT[self.phase]:
            raise TransitionError(f"utterance {self.utt.uid}: {self.phase.value} -> {phase.value}")
        self.phase = phase

    def pause(self, spec_job: DecodeJob, result: TranscriptResult | None = None, turn_asked: bool = False) -> None:
        """A pause reached tail_ms: `spec_job` decodes the speech so far (`result`: already decoded,
        an early speculation's; `turn_asked`: the end-of-turn model hears it too); the old pause's
        verdict is void."""
        self._go(Phase.PAUSED)
        self.spec_job, self.spec_result, self.verdict = spec_job, result, None
        self.turn_asked, self.turn_prob = turn_asked, None
        self.early_job = self.early_result = None

    def take_early(self) -> tuple[DecodeJob | None, TranscriptResult | None]:
        """The early speculation (and its result), no longer this state's to keep."""
        job, result = self.early_job, self.early_result
        self.early_job = self.early_result = None
        return job, result

    def resume(self) -> None:
        """Speech resumed in the pause: its speculation is void."""
        self._go(Phase.OPEN)
        self.spec_job, self.spec_result, self.turn_prob, self.verdict = None, None, None, None

    def speculation_failed(self) -> None:
        """The pause's speculative decode was dropped or failed: the end will submit a fresh final."""
        self.spec_job = None

    def end(self, utt: Utterance, final_job: DecodeJob, ended_by: str = "") -> None:
        """The segmenter ended the utterance (`utt`: its final audio); `final_job` decodes it."""
        self._go(Phase.ENDED)
        self.utt, self.final_job, self.ended_by = utt, final_job, ended_by
        if final_job is not self.spec_job:
            self.spec_job = None

    def finish(self) -> None:
        """The final is published, suppressed or lost."""
        self._go(Phase.DONE)
