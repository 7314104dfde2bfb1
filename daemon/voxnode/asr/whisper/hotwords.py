"""Hotwords: a bonus in the beam search's ranking for tokens that spell a configured word or phrase.

Putting the words in the prompt (what faster-whisper's `hotwords` does, and what the engine
does too) moves the model only so far: on the pocketsphinx "cards" recordings tiny.en still
writes "queen of clothes" with the suits in the prompt, " clubs" 1.8 nats behind " clothes".
So the beam search also ranks hypotheses by their log-probability plus `boost` nats for every
token that extends a hotword, kept only once the whole hotword is spelled (a match that breaks
off gives its bonus back): contextual biasing with a prefix tree of the hotwords' tokens, as
in k2/icefall's and sherpa-onnx's hotwords. The bonus changes the ranking only; confidences,
the no-speech rule and the fallback see the model's own log-probabilities.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class Encoder(Protocol):
    tokens: list[str]  # the vocabulary, GPT-2's printable form ("Ġ" = a leading space)

    def encode(self, text: str) -> list[int]: ...


@dataclass(frozen=True)
class BiasState:
    node: int = 0  # where the hypothesis stands in the prefix tree; 0 = no match under way
    pending: float = 0.0  # bonus given to the match under way, taken back if it breaks off


ROOT = BiasState()


class HotwordBias:
    def __init__(self, sequences: list[list[int]], boost: float, word_ends: list[set[int]] | None = None) -> None:
        """sequences: token ids of each hotword; word_ends[i]: positions in sequences[i] after
        which a word is complete (the bonus is kept there; default: only the last)."""
        self.boost = float(boost)
        self.children: list[dict[int, int]] = [{}]
        self.terminal: list[bool] = [False]
        for k, seq in enumerate(sequences):
            ends = word_ends[k] if word_ends is not None else {len(seq) - 1}
            node = 0
            for i, t in enumerate(seq):
                nxt = self.children[node].get(t)
                if nxt is None:
                    nxt = len(self.children)
                    self.children[node][t] = nxt
                    self.children.append({})
                    self.terminal.append(False)
                node = nxt
                if i in ends or i == len(seq) - 1:
                    self.terminal[node] = True

    @classmethod
    def build(cls, tokenizer: Encoder, hotwords: tuple[str, ...] | list[str], boost: float) -> HotwordBias | None:
        """Each hotword as it is written, lower-case and capitalised, after a space (how words
        are spelled in the middle of a transcript) and at the very start.

        In a phrase the bonus is kept at the end of every word, not only of the phrase: with
        "pound key" a hotword, "or pound to cancel" came out "or pound key cancel" when breaking
        off after "pound" gave its bonus back. Within a word it is given back ("Roomba" is
        " Room" + "ba": " Room" alone earns nothing)."""
        words = [w.strip() for w in hotwords if w and w.strip()]
        if not words or boost <= 0:
            return None
        sequences: list[list[int]] = []
        ends: list[set[int]] = []
        for w in words:
            for form in {w, w.lower(), w[0].upper() + w[1:]}:
                for text in (" " + form, form):
                    seq = tokenizer.encode(text)
                    if seq and seq not in sequences:
                        sequences.append(seq)
                        ends.append({i for i in range(len(seq) - 1) if tokenizer.tokens[seq[i + 1]].startswith("Ġ")})
        return cls(sequences, boost, ends)

    def candidates(self, state: BiasState) -> list[int]:
        """Tokens that would earn a bonus from `state`: the match's next tokens and any hotword's first."""
        if state.node:
            return list(self.children[state.node]) + list(self.children[0])
        return list(self.children[0])

    def advance(self, state: BiasState, token: int) -> tuple[BiasState, float]:
        """(state after `token`, change to the hypothesis's bonus)."""
        delta, pending = 0.0, state.pending
        child = self.children[state.node].get(token) if state.node else None
        if child is None:  # not the match's next token
            delta, pending = -state.pending, 0.0  # the match under way, if any, broke off
            child = self.children[0].get(token)
            if child is None:
                return ROOT, delta
        delta += self.boost
        pending += self.boost
        if self.terminal[child]:  # the whole hotword is spelled: its bonus stays
            return (BiasState(child, 0.0) if self.children[child] else ROOT), delta
        return BiasState(child, pending), delta
