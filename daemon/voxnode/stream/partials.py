"""Stable-prefix logic for partial transcripts.

Each re-decode of the growing utterance gives a hypothesis.  A word becomes
stable when two consecutive hypotheses agree on it (and on every word before
it).  The stable prefix only grows: once a partial has shown a word, later
partials keep it, even if a later hypothesis changes its mind (the final is
free to differ; it is decoded from the whole utterance).

The last word of a hypothesis decoded while speech is still going on is
often cut mid-word, so it is never considered (`drop_last`).

Words are voxnode.text's display words: in Chinese and Japanese (no spaces between words) each
character is one, so a partial grows character by character there and is joined without spaces.
"""

from __future__ import annotations

from dataclasses import dataclass

from voxnode import text as script

# Partials stop after this many silent frames (60 ms): once the speaker pauses, a partial would only
# repeat itself and delay the speculative final behind it on the engine (live streams and Wyoming).
PARTIAL_QUIET_FRAMES = 3


@dataclass(frozen=True)
class PartialParams:
    """[stream] partials, for the microphones and Wyoming alike (stream/params.py `partial_params`)."""

    enabled: bool  # stream.partials
    interval_s: float  # stream.partial_interval_ms
    min_audio_s: float  # stream.partial_min_audio_ms
    max_share: float  # stream.partial_max_share: the next partial waits at least the last one's decode time / this


def words(text: str) -> list[str]:
    return script.units(text)


def norm(word: str) -> str:
    """Comparison key: case and punctuation do not make two words differ."""
    return script.key(word)


class StablePrefix:
    def __init__(self) -> None:
        self._stable: list[str] = []
        self._prev: list[str] | None = None

    @property
    def text(self) -> str:
        return script.join(self._stable)

    @property
    def words(self) -> list[str]:
        return list(self._stable)

    def update(self, hypothesis: str, drop_last: bool = True) -> str | None:
        """Feed a new hypothesis; returns the new stable text if it grew, else None."""
        hyp = words(hypothesis)
        if drop_last and hyp:
            hyp = hyp[:-1]
        prev, self._prev = self._prev, hyp
        if prev is None:
            return None
        agreed = 0
        for a, b in zip(prev, hyp, strict=False):  # up to the shorter one
            if norm(a) != norm(b):
                break
            agreed += 1
        n = len(self._stable)
        if agreed <= n:
            return None
        # The agreed words must extend what was already shown, not contradict it.
        if any(norm(a) != norm(b) for a, b in zip(self._stable, hyp[:n], strict=False)):
            return None
        self._stable.extend(hyp[n:agreed])
        return self.text
