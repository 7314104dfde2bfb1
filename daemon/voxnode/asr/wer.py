"""Word error rate with light normalisation, for tests and benchmarks.

Whisper writes "Mr." and "10"; reference transcripts say "mister" and
"ten". Both sides are lower-cased, stripped of punctuation, hyphens split,
and small numbers spelled out, so WER counts recognition errors, not style.
"""

from __future__ import annotations

import re

_ONES = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen"
).split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
_ABBREVIATIONS = {"mr": "mister", "mrs": "missus", "dr": "doctor", "st": "saint"}


def _spell(n: int) -> str:
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("" if n % 10 == 0 else " " + _ONES[n % 10])
    if n < 1000:
        rest = n % 100
        return _ONES[n // 100] + " hundred" + ("" if rest == 0 else " " + _spell(rest))
    return " ".join(_ONES[int(d)] for d in str(n))  # long numbers: digit by digit


def normalise(text: str) -> list[str]:
    text = text.lower().replace("-", " ")
    text = re.sub(r"(\d),(\d)", r"\1\2", text)
    words = []
    for word in re.sub(r"[^a-z0-9' ]", " ", text).split():
        word = word.strip("'")
        if word.isdigit():
            words.extend(_spell(int(word)).split())
        elif word:
            words.append(_ABBREVIATIONS.get(word, word))
    return words


def edit_distance(ref: list[str], hyp: list[str]) -> int:
    prev = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        cur = [i] + [0] * len(hyp)
        for j, h in enumerate(hyp, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r != h))
        prev = cur
    return prev[-1]


def word_errors(reference: str, hypothesis: str) -> tuple[int, int]:
    """(errors, reference word count) after normalisation."""
    ref, hyp = normalise(reference), normalise(hypothesis)
    return edit_distance(ref, hyp), len(ref)


def wer(reference: str, hypothesis: str) -> float:
    errors, n = word_errors(reference, hypothesis)
    return errors / max(n, 1)


def corpus_wer(pairs: list[tuple[str, str]]) -> float:
    """Errors over all reference words of (reference, hypothesis) pairs."""
    totals = [word_errors(r, h) for r, h in pairs]
    return sum(e for e, _ in totals) / max(1, sum(n for _, n in totals))
