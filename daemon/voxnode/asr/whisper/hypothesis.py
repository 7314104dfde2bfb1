"""A hypothesis of the search and how it ends: the tokens it holds (`Hyp`), the result it becomes
(`Decoded`), Whisper's ranking of ended ones (`best`), and the cuts that end one early: a loop of the
same tokens (`loop_cut`) and a whole-utterance repeat longer than its speech (`first_copy`,
`cut_at_first_copy`; the rule is redecode.repeat_cut's)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from voxnode.asr.whisper.guards import repeated_tail
from voxnode.asr.whisper.hotwords import ROOT, BiasState


@dataclass(frozen=True)
class Decoded:
    """A hypothesis that ended: its text tokens, why it stopped, and what ranks it."""

    tokens: list[int]
    logprobs: list[float]  # one per token in `tokens`, plus the end-of-text token if reached
    no_speech_prob: float
    stop_reason: str  # "eot", "token_cap" or "repetition"
    temperature: float = 0.0
    bonus: float = 0.0  # hotword bonus earned (ranking only)

    @property
    def avg_logprob(self) -> float:
        return float(np.mean(self.logprobs)) if self.logprobs else 0.0

    @property
    def score(self) -> float:
        """Whisper's ranking: summed log-probability over the number of text tokens."""
        return float(np.sum(self.logprobs)) / max(1, len(self.tokens))


@dataclass
class Hyp:
    """A live hypothesis of the search (beam_search, sample, verified_draft's head)."""

    tokens: list[int]
    logprobs: list[float]
    total: float  # summed log-probability
    bonus: float = 0.0  # hotword bonus
    bias: BiasState = ROOT
    # ends[j]: the end-of-text's log-probability after the first j tokens (beam search and the
    # draft's verification keep it; sampling does not): what ending there would have scored.
    ends: list[float] = field(default_factory=list)
    # > 0: the tokens are a whole-utterance repeat longer than its speech, its first copy this many
    # tokens (beam_search's `repeat_cut`); kept by the hypotheses that go on from it.
    first_copy: int = 0


def finish(h: Hyp, stop: str, no_speech: float, temperature: float) -> Decoded:
    return Decoded(list(h.tokens), list(h.logprobs), no_speech, stop, temperature, h.bonus - h.bias.pending)


def loop_cut(h: Hyp, no_speech: float, temperature: float) -> Decoded | None:
    cut = repeated_tail(h.tokens)
    if not cut:
        return None
    return Decoded(h.tokens[:-cut], h.logprobs[:-cut], no_speech, "repetition", temperature)


def best(results: list[Decoded]) -> Decoded:
    """The highest-ranked result, preferring those that reached end-of-text.

    Whisper's score plus the hotword bonus over the longest candidate's length: one scale for
    every candidate. Divided by each candidate's own length, the bonus made stopping right after
    a hotword pay ("Welcome to Comedian Mail." for the 17-token prompt that goes on after it).
    """
    pool = [r for r in results if r.stop_reason == "eot"] or results
    longest = max(1, max(len(r.tokens) for r in pool))
    return max(pool, key=lambda r: r.score + r.bonus / longest)


# tokens -> how many of them make the first copy of a whole-utterance repeat longer than its speech
# could hold, else None (redecode.repeat_cut).
RepeatCut = Callable[[list[int]], int | None]


def first_copy(h: Hyp, cut: RepeatCut) -> int:
    """`h.first_copy` for a new hypothesis: its parent's, else where its first copy ends if its
    tokens now say the whole utterance again faster than the speech could (`cut`), else 0. The
    text is decoded only where the new token ended an earlier copy too (it is among the tokens
    before it): a second copy ends on its first copy's last token."""
    if h.first_copy or len(h.tokens) < 4 or h.tokens[-1] not in h.tokens[:-1]:
        return h.first_copy
    m = cut(h.tokens)
    return m if m is not None and m < len(h.ends) else 0


def cut_at_first_copy(h: Hyp, no_speech: float) -> Decoded:
    """The candidate the search would have set aside had `h` taken the end-of-text after its first
    copy: that copy's tokens and their log-probabilities plus the end-of-text's there (`h.ends`), so
    it ranks against other ended candidates as they do."""
    m = h.first_copy
    bonus = (h.bonus - h.bias.pending) * m / len(h.tokens)  # the hotword bonus: the first copy's share
    return Decoded(h.tokens[:m], h.logprobs[:m] + [h.ends[m]], no_speech, "eot", 0.0, bonus)
