"""Standard WER scoring for benchmarks: jiwer over Whisper's English text normaliser.

Whisper's normaliser (the `whisper-normalizer` package, a copy of openai-whisper's
EnglishTextNormalizer) lower-cases, removes punctuation, spells British forms the American way
and writes numbers as digits, so "ten" and "10" or "Mr." and "mister" agree. This is how
published Whisper WER figures are scored, so ours can be compared with them.
Benchmark venv only (scripts/bench/requirements.txt); the daemon and the tests use
voxnode.asr.wer, which needs no extra package.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import jiwer
from whisper_normalizer.english import EnglishTextNormalizer


@lru_cache(maxsize=1)
def _normalizer() -> EnglishTextNormalizer:
    return EnglishTextNormalizer()


def normalize(text: str) -> str:
    return " ".join(_normalizer()(text).split())


@dataclass(frozen=True)
class Score:
    words: int  # reference words after normalisation
    substitutions: int
    deletions: int
    insertions: int

    @property
    def errors(self) -> int:
        return self.substitutions + self.deletions + self.insertions

    @property
    def wer(self) -> float:
        """Word error rate in percent (0 for an empty reference with an empty hypothesis)."""
        return 100.0 * self.errors / self.words if self.words else (0.0 if not self.insertions else 100.0)

    def __add__(self, other: Score) -> Score:
        return Score(
            self.words + other.words,
            self.substitutions + other.substitutions,
            self.deletions + other.deletions,
            self.insertions + other.insertions,
        )


ZERO = Score(0, 0, 0, 0)


def score(reference: str, hypothesis: str) -> Score:
    """One pair, normalised. Corpus WER is the sum of Scores (errors over all words), not a mean of WERs."""
    ref, hyp = normalize(reference), normalize(hypothesis)
    if not ref:
        return Score(0, 0, 0, len(hyp.split()))
    if not hyp:
        return Score(len(ref.split()), 0, len(ref.split()), 0)
    o = jiwer.process_words(ref, hyp)
    return Score(o.hits + o.substitutions + o.deletions, o.substitutions, o.deletions, o.insertions)


def corpus_score(references: list[str], hypotheses: list[str]) -> Score:
    total = ZERO
    for r, h in zip(references, hypotheses, strict=True):
        total = total + score(r, h)
    return total
