"""When a pause ends the utterance: named rules, asked in a declared order.

A pause that reaches `vad.tail_ms` is decoded speculatively (stream/utterances.py) and, with
`vad.end_of_turn`, heard by the end-of-turn model (stream/turn.py). Both answers are the pause's
evidence (`PauseEvidence`). Each rule reads it and either decides how much silence ends this pause
(a `Verdict`: its hangover), or has no opinion (None: the next rule is asked), or says that the
evidence it needs is still to come (WAIT: the chain stops and is asked again when it comes). The
first rule that decides names why the utterance ended: the debug log lines carry the name, and the
stream's counters (endpoints_sentence_end / endpoints_open / endpoints_by_turn / endpoints_agreed)
count by it.

Declared order (built from [vad] by stream/params.py `end_rules`; config/vad.py holds the defaults
and the measurements behind them):

  open_ending   the text clearly goes on ("and", "for", a comma, "...")   vad.open_hangover_ms
  agreed_end    (vad.end_of_turn, vad.agreed_end_hangover_ms > 0) the text
                and the sound agree: a closing mark of at least
                vad.sentence_end_min_prob and the model's P(finished) of at
                least vad.agreed_end_min_prob                             vad.agreed_end_hangover_ms
  closing_mark  a closing '.', '?' or '!' the decoder gave at least
                vad.sentence_end_min_prob                                 vad.sentence_end_hangover_ms
  end_of_turn   (vad.end_of_turn) where the text cannot tell: the model's
                P(finished) of at least vad.end_of_turn_min_prob          vad.sentence_end_hangover_ms
  hangover      anything else, always                                     vad.hangover_ms

The order is the policy: the text first (a clearly open ending stays open however sure its full
stop, "Set a timer for."; a sure closing mark ends the sentence whatever the sound says), the sound
where the text cannot tell, and the ordinary hangover last. Where both say finished the pause is
shortest: a fragment cut at a speaker's pause in mid-sentence rarely has both. The text rules say
nothing about a decode that did not end on its own end-of-text token (a token cap, a repetition guard).

Only `end_of_turn` waits for the model. `agreed_end` passes while the model's answer is out, so a
sure closing mark decides meanwhile; the chain is asked again when the answer comes
(stream/utterances.py), and its verdict, if another, replaces the one applied (a shorter hangover
for the pause still going on, or the end now if the pause already lasted it).

Two ends are the segmenter's own, outside the chain, and named by its reasons (stream/segmenter.py):
`max_length` (stream.max_utterance_ms: cut in the longest recent pause, the rest goes on as a new
utterance; behind a wake word the rest is dropped, stream/wake_gate.py: one wake word, one
utterance) and `flush` (the end of the stream). After the pause reached its hangover the segmenter
reports `endpoint`, and the utterance is said to be ended by the rule whose hangover it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Final, Protocol

from voxnode import text as script
from voxnode.asr.recognizer import TranscriptResult

from .endpoint import Completion, ends_open, ends_sentence


@dataclass(frozen=True)
class PauseEvidence:
    """What is known of a pause when its rules are asked."""

    text: str  # the speculative decode's text, cleaned up as published (voxnode.text.clean_text)
    ended_cleanly: bool  # the decoder stopped on its own end-of-text token
    punctuation_prob: float | None  # the decoder's probability of the closing mark it wrote (None: not known)
    language: str  # the text's Whisper code ("" = English)
    turn_asked: bool = False  # the end-of-turn model was asked about this pause
    turn_prob: float | None = None  # its P(finished); None: not asked, or not back yet

    @classmethod
    def of(cls, result: TranscriptResult, turn_asked: bool = False, turn_prob: float | None = None) -> PauseEvidence:
        return cls(
            script.clean_text(result.text),
            result.ended_cleanly,
            result.punctuation_prob,
            result.language,
            turn_asked,
            turn_prob,
        )


@dataclass(frozen=True)
class Verdict:
    rule: str  # the name of the rule that decided
    completion: Completion
    hangover_frames: int  # the silence after the last speech that ends this pause, in 20 ms frames


class _Wait:
    def __repr__(self) -> str:
        return "WAIT"


WAIT: Final = _Wait()  # a rule's evidence is still to come: ask the chain again when it is in


class PauseRule(Protocol):
    """One rule of the chain: a name (what the logs say) and its own params, set from config."""

    name: ClassVar[str]

    def judge(self, pause: PauseEvidence) -> Verdict | _Wait | None: ...


@dataclass(frozen=True)
class OpenEnding:
    hangover_frames: int  # vad.open_hangover_ms
    name: ClassVar[str] = "open_ending"

    def judge(self, pause: PauseEvidence) -> Verdict | _Wait | None:
        if pause.ended_cleanly and ends_open(pause.text, pause.language):
            return Verdict(self.name, Completion.OPEN, self.hangover_frames)
        return None


def sure_closing_mark(pause: PauseEvidence, min_prob: float) -> bool:
    """The decoder ended on its own and wrote a closing mark it gave at least `min_prob`: what closing_mark
    decides on alone and agreed_end with the model."""
    return pause.ended_cleanly and ends_sentence(pause.text, pause.punctuation_prob, min_prob)


@dataclass(frozen=True)
class AgreedEnd:
    """The text and the sound both say finished. Passes until the model's answer is in: a sure closing
    mark alone decides meanwhile, and this rule may shorten its hangover when the answer comes."""

    mark_min_prob: float  # vad.sentence_end_min_prob
    turn_min_prob: float  # vad.agreed_end_min_prob
    hangover_frames: int  # vad.agreed_end_hangover_ms
    name: ClassVar[str] = "agreed_end"

    def judge(self, pause: PauseEvidence) -> Verdict | _Wait | None:
        if pause.turn_prob is None or pause.turn_prob < self.turn_min_prob:
            return None
        if sure_closing_mark(pause, self.mark_min_prob):
            return Verdict(self.name, Completion.SENTENCE_END, self.hangover_frames)
        return None


@dataclass(frozen=True)
class ClosingMark:
    min_prob: float  # vad.sentence_end_min_prob
    hangover_frames: int  # vad.sentence_end_hangover_ms
    name: ClassVar[str] = "closing_mark"

    def judge(self, pause: PauseEvidence) -> Verdict | _Wait | None:
        if sure_closing_mark(pause, self.min_prob):
            return Verdict(self.name, Completion.SENTENCE_END, self.hangover_frames)
        return None


@dataclass(frozen=True)
class EndOfTurn:
    """Asked only where the model heard the pause (no model running: no opinion)."""

    min_prob: float  # vad.end_of_turn_min_prob
    hangover_frames: int  # vad.sentence_end_hangover_ms
    name: ClassVar[str] = "end_of_turn"

    def judge(self, pause: PauseEvidence) -> Verdict | _Wait | None:
        if not pause.turn_asked:
            return None
        if pause.turn_prob is None:
            return WAIT
        if pause.turn_prob >= self.min_prob:
            return Verdict(self.name, Completion.SENTENCE_END, self.hangover_frames)
        return None


@dataclass(frozen=True)
class Hangover:
    """The last rule: it always decides."""

    hangover_frames: int  # vad.hangover_ms
    name: ClassVar[str] = "hangover"

    def judge(self, pause: PauseEvidence) -> Verdict:
        return Verdict(self.name, Completion.UNKNOWN, self.hangover_frames)


@dataclass(frozen=True)
class EndRules:
    """The chain: `rules` in order, then `last`, which always decides."""

    rules: tuple[PauseRule, ...]
    last: Hangover

    @property
    def names(self) -> tuple[str, ...]:
        return (*(r.name for r in self.rules), self.last.name)

    def verdict(self, pause: PauseEvidence) -> Verdict | None:
        """The first rule's that decides; None while a rule waits for its evidence."""
        for rule in self.rules:
            v = rule.judge(pause)
            if isinstance(v, Verdict):
                return v
            if v is WAIT:
                return None
        return self.last.judge(pause)
