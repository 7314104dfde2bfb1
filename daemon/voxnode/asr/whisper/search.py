"""Choosing the tokens: beam search (greedy is beam 1) and sampling at a temperature.

Both follow openai-whisper's decoding (whisper/decoding.py): text tokens only,
no blank or end-of-text as the first token, log-probabilities of the
untempered distribution, and hypotheses ranked by their summed
log-probability divided by their length (Whisper's default "length
penalty"). Beam search keeps `beam_size` live hypotheses; at each step every
one offers its `beam_size + 1` best tokens, the best candidates overall
continue and those ending in end-of-text are set aside; it stops once
`beam_size` have ended (a search from a draft's head, while the best ended one
has no closing mark: twice that, UNCLOSED_PATIENCE), or sooner once an ended one
ranks above every live one (measured below). All hypotheses run in one decoder
call per step.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from voxnode.asr.recognizer import DecodeAbandoned
from voxnode.asr.whisper.decoder import DecoderRunner, Prefix
from voxnode.asr.whisper.guards import repeated_tail
from voxnode.asr.whisper.hotwords import ROOT, BiasState, HotwordBias
from voxnode.asr.whisper.hypothesis import (
    Decoded,
    Hyp,
    RepeatCut,
    best,
    cut_at_first_copy,
    finish,
    first_copy,
    loop_cut,
)
from voxnode.asr.whisper.token_rules import TokenRules


@dataclass
class DraftStats:
    """Drafts verified since the engine loaded: how many, their tokens, how many were accepted."""

    decodes: int = 0
    tokens: int = 0
    accepted: int = 0

    def add(self, tokens: int, accepted: int) -> None:
        self.decodes += 1
        self.tokens += tokens
        self.accepted += accepted

    def as_dict(self) -> dict[str, float | int]:
        rate = self.accepted / self.tokens if self.tokens else 0.0
        return {**vars(self), "acceptance": round(rate, 3)}


# A candidate continuation: (rank, parent, token, bias state, bonus change); rank = log-probability + bonus.
_Candidate = tuple[float, int, int, BiasState, float]


def top_tokens(row: np.ndarray, k: int) -> list[int]:
    """The k allowed tokens of a log-probability row with the highest values, best first, the
    lower id first among equal values (suppressed tokens, -inf, never).

    k argmax passes, each best set aside for the next: for k <= 6 about 3x cheaper than
    np.argpartition over the vocabulary (57 us a row here), which also left the order among
    equal values to its partition."""
    picked: list[int] = []
    values: list[float] = []
    for _ in range(min(k, len(row))):
        t = int(np.argmax(row))
        v = row[t]
        if not np.isfinite(v):
            break
        picked.append(t)
        values.append(v)
        row[t] = -np.inf
    row[picked] = values
    return picked


def _candidates(live: list[Hyp], lp: np.ndarray, k: int, bias: HotwordBias | None) -> list[_Candidate]:
    """Every live hypothesis's k best tokens (and the hotwords' next tokens), best first."""
    scored: dict[tuple[int, ...], _Candidate] = {}
    for i, h in enumerate(live):
        tokens = top_tokens(lp[i], k)
        if bias is not None:
            tokens += [t for t in bias.candidates(h.bias) if t not in tokens and np.isfinite(lp[i, t])]
        for t in tokens:
            state, delta = bias.advance(h.bias, t) if bias is not None else (ROOT, 0.0)
            scored[(*h.tokens, t)] = (h.total + h.bonus + delta + float(lp[i, t]), i, t, state, delta)
    return sorted(scored.values(), key=lambda c: c[0], reverse=True)


# A search that goes on from a draft's head stops after this many times `beam_size` ended candidates,
# instead of Whisper's `beam_size`, while the best of them has no closing mark (or once an ended one
# ranks above every live one: the early stop). From the start of the text the beam's live
# continuations keep early ends out of its top ranks; a search resumed from one hypothesis deep in the
# text lets them in at its first steps, and three early ends stopped it before the continuation that
# ranks highest had ended: "... in his power to do for" for "... in his power to do for them." (traced
# in stop 42: the same with the draft's cache computed step by step, so not the one-call arithmetic
# once suspected; a float32-epsilon perturbation of the decoder's inputs changes its cache more than
# the one-call prefill does, and no text). Measured against the re-decode without the draft that it
# replaces (the live clean track's 25 utterances, drafts from partials every 0.4 s, 292 finals:
# without either 6 lost 4-5 words and 7 only the closing mark; re-decode 0 / 0 after re-decoding 25;
# this 0 / 0), scripts/bench/drafts.py (50 real utterances, 1 thread; beam 3 + draft WER clean /
# babble 10 dB / pink 5 dB 4.12 / 22.03 / 10.90 % -> 4.12 / 22.28 / 10.90) and 100 finals with the
# draft of a partial 1.2 s before the end (clean and pink 10 dB): decoder steps 772 -> 691, final's
# CPU p95 209-252 -> 170-180 ms (p50 50 ms both), 98 of 100 texts the same. Twice the beam for every
# search from a draft (mark or not) lost 1.2-1.5 points in babble and pink 5 dB: there, early ends are
# what keeps the babble's words out.
UNCLOSED_PATIENCE = 2

# Draft rows whose log-probabilities verified_draft computes at once: as many as beam 5's rows, so
# TokenRules' scratch buffer does not grow for a long draft.
VERIFY_ROWS = 5


@dataclass(frozen=True)
class Verified:
    """The part of a draft the decoder agreed with: where decoding goes on from."""

    prefix: Prefix  # the start sequence and the accepted draft tokens
    start: Hyp  # the hypothesis holding the accepted tokens (and their log-probabilities)

    @property
    def accepted(self) -> int:
        return len(self.start.tokens)


def verified_draft(
    rules: TokenRules,
    prefix: Prefix,
    draft: list[int],
    max_new_tokens: int,
    bias: HotwordBias | None = None,
    min_margin: float = 0.0,
) -> Verified:
    """The longest head of `draft` that greedy decoding would have chosen, token by token.

    `prefix` is the prefill of the start sequence followed by `draft` (DecoderRunner.prefill with
    draft=len(draft)): its row logits give the decoder's choice after each draft token, all from one
    call. A draft token is accepted while it is the greedy choice (the same ranking as
    beam_search's, hotword bonus included), is not end-of-text, starts no loop and stays under the
    token cap; decoding goes on from the first disagreement, so the result is the greedy
    decode's whatever the draft was (up to float rounding between one call and many).

    `min_margin` (a final's beam: `asr.draft_margin`, DecodeOptions.draft_margin) also stops at the
    first draft token whose score leads the runner-up's by less than that many nats: where greedy
    decoding is unsure the beam searches on its own.
    """
    h = Hyp([], [], 0.0)
    block = np.empty((0, 0), np.float32)
    for i, token in enumerate(draft):
        if i % VERIFY_ROWS == 0:
            # The log-probabilities of VERIFY_ROWS draft rows in one pass (the same values as row
            # by row: each row's reductions run over that row alone); only the first row
            # predicts the first token.
            block = prefix.row_logits[i : min(len(draft), i + VERIFY_ROWS)].copy()
            if i == 0:
                block[0, rules.suppress_begin] = -np.inf
            block = rules.logprobs(block, first=False)
        lp = block[i % VERIFY_ROWS : i % VERIFY_ROWS + 1]
        best_choice = _candidates([h], lp, 2, bias)
        if not best_choice:
            break
        score, _, t, state, delta = best_choice[0]
        if t != token or t == rules.eot:
            break
        if min_margin > 0 and len(best_choice) > 1 and score - best_choice[1][0] < min_margin:
            break
        nxt = Hyp(
            h.tokens + [t],
            h.logprobs + [float(lp[0, t])],
            h.total + float(lp[0, t]),
            h.bonus + delta,
            state,
            h.ends + [float(lp[0, rules.eot])],
        )
        if repeated_tail(nxt.tokens) or len(nxt.tokens) >= max_new_tokens:
            break
        h = nxt
    return Verified(prefix.cut(prefix.length - len(draft) + len(h.tokens)), h)


def _enough_ended(
    finished: list[Decoded], beam_size: int, from_draft: bool, closing: Callable[[list[int]], int | None] | None
) -> int:
    """How many ended candidates stop the search: Whisper's `beam_size`; from a draft's head, while
    the best ended one has no closing mark, UNCLOSED_PATIENCE times that (greedy decoding stays greedy)."""
    if beam_size > 1 and from_draft and closing is not None and finished and closing(best(finished).tokens) is None:
        return UNCLOSED_PATIENCE * beam_size
    return beam_size


def beam_search(
    dec: DecoderRunner,
    rules: TokenRules,
    prefix: Prefix,
    max_new_tokens: int,
    beam_size: int,
    bias: HotwordBias | None = None,
    abandon: threading.Event | None = None,
    start: Hyp | None = None,
    closing: Callable[[list[int]], int | None] | None = None,
    repeat_cut: RepeatCut | None = None,
) -> Decoded:
    """Raises DecodeAbandoned before the next decoder call once `abandon` is set. `start`: the
    hypothesis `prefix` already holds (a verified draft's tokens), else none. `closing` (tokens ->
    where their closing mark is, or None) lets a search from a draft's head wait for more ended
    candidates while the best has none (UNCLOSED_PATIENCE). `repeat_cut` marks a hypothesis that
    says the whole utterance again faster than its speech could: at the token cap, or once every
    live hypothesis is such a repeat and none has ended, they end at their first copies."""
    no_speech = rules.no_speech_prob(prefix)
    live = [start or Hyp([], [], 0.0)]
    done_before = len(live[0].tokens)
    logits = prefix.first_logits[None].copy()  # logprobs() works in place; the prefix is reused
    finished: list[Decoded] = []
    hyps = None
    while True:
        lp = rules.logprobs(logits, first=not live[0].tokens)
        nxt: list[Hyp] = []
        parents: list[int] = []
        for _, i, t, state, delta in _candidates(live, lp, beam_size + 1, bias):
            parent = live[i]
            h = Hyp(
                parent.tokens + [t],
                parent.logprobs + [float(lp[i, t])],
                parent.total + float(lp[i, t]),
                parent.bonus + delta,
                state,
                parent.ends + [float(lp[i, rules.eot])],
                parent.first_copy,
            )
            if t == rules.eot:
                h.tokens.pop()
                finished.append(finish(h, "eot", no_speech, 0.0))
                continue
            looped = loop_cut(h, no_speech, 0.0)
            if looped:
                finished.append(looped)
                continue
            if repeat_cut is not None:
                h.first_copy = first_copy(h, repeat_cut)
            nxt.append(h)
            parents.append(i)
            if len(nxt) == beam_size:
                break
        if len(finished) >= _enough_ended(finished, beam_size, done_before > 0, closing) or not nxt:
            break
        if all(h.first_copy for h in nxt) and not any(f.stop_reason == "eot" for f in finished):
            # Every live hypothesis says the whole utterance again faster than its speech could, and
            # none has ended: each can only go on to more copies and then end (a final is then cut to
            # its first copy: redecode.collapse) or loop to the token cap (a final then decoded again
            # in a longer window, which gave the first copy's words in every case looked at). End
            # them at their first copies now. Measured in stop 53 (scripts/bench/first_window.py: 50
            # real utterances, drafted finals, beam 3; clean, pink and babble at 10 dB, pink, babble
            # and white at 5 dB): 2 of the 3 token-cap loops of the 10 dB set end at their first copy
            # instead of a retry in the 10 s window (the retry's words both times); a final's CPU
            # mean -12 % clean and pink 10 dB (p95 -16 / -18 %), -1 to -10 % elsewhere; 299 of 300
            # texts the same words, one a coin flip ("10 of clubs" -> "10 of close.", clean +0.24
            # points of WER).
            finished += [cut_at_first_copy(h, no_speech) for h in nxt]
            break
        if finished and best(finished).score > max(h.total / len(h.tokens) for h in nxt):
            # Early stop: an ended hypothesis already ranks above every live one as they stand
            # (adding tokens seldom raises a hypothesis's mean log-probability), so the search
            # need not wait for `beam_size` of them to end. Whisper waits; here the live ones
            # went on for a few steps more to end as also-rans. Measured with drafts
            # (scripts/bench/drafts.py's finals, 50 real utterances, 1 thread): WER clean 4.6 ->
            # 4.1 %, babble 10 dB 23.0 -> 23.0, pink 5 dB 10.9 -> 10.9; median final 28 -> 22 ms
            # (p95 95 -> 89). Stopping as soon as the best candidate of a step is end-of-text
            # was as fast but cost babble 1.7 points (23.0 -> 24.7).
            break
        if len(nxt[0].tokens) >= max_new_tokens:
            # A hypothesis that said the whole utterance again ends at its first copy, not at the cap.
            finished += [
                cut_at_first_copy(h, no_speech) if h.first_copy else finish(h, "token_cap", no_speech, 0.0) for h in nxt
            ]
            break
        if hyps is None:
            hyps = dec.hypotheses(prefix, len(nxt), max_new_tokens - done_before)
        else:
            hyps.reorder(parents)
        live = nxt
        if abandon is not None and abandon.is_set():
            raise DecodeAbandoned
        logits = dec.step(hyps, [h.tokens[-1] for h in live])
    return best(finished)


def sample(
    dec: DecoderRunner,
    rules: TokenRules,
    prefix: Prefix,
    max_new_tokens: int,
    best_of: int,
    temperature: float,
    rng: np.random.Generator,
    abandon: threading.Event | None = None,
) -> Decoded:
    """`best_of` independent samples at `temperature`, run side by side; the best-ranked one.
    Raises DecodeAbandoned before the next decoder call once `abandon` is set."""
    no_speech = rules.no_speech_prob(prefix)
    live = [Hyp([], [], 0.0) for _ in range(best_of)]
    logits = np.repeat(prefix.first_logits[None], best_of, axis=0)
    finished: list[Decoded] = []
    hyps = None
    while live:
        lp = rules.logprobs(logits, first=not live[0].tokens)
        keep: list[int] = []
        for i, h in enumerate(live):
            p = np.exp((lp[i] - lp[i].max()) / temperature)
            t = int(np.searchsorted(np.cumsum(p), rng.random() * p.sum(), side="right"))
            t = min(t, len(p) - 1)
            h.logprobs.append(float(lp[i, t]))
            h.total += float(lp[i, t])
            if t == rules.eot:
                finished.append(finish(h, "eot", no_speech, temperature))
                continue
            h.tokens.append(t)
            looped = loop_cut(h, no_speech, temperature)
            if looped:
                finished.append(looped)
            elif len(h.tokens) >= max_new_tokens:
                finished.append(finish(h, "token_cap", no_speech, temperature))
            else:
                keep.append(i)
        live = [live[i] for i in keep]
        if not live:
            break
        if hyps is None:
            hyps = dec.hypotheses(prefix, len(live), max_new_tokens)
        else:
            hyps.reorder(keep)
        if abandon is not None and abandon.is_set():
            raise DecodeAbandoned
        logits = dec.step(hyps, [h.tokens[-1] for h in live])
    return best(finished)
