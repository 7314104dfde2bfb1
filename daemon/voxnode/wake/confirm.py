"""`wake.confirm = "openwakeword"`: a second chance for the "alexa" that microWakeWord scores just under its cutoff.

microWakeWord alone still fires, at a stricter ALONE_CUTOFF (0.995 for alexa, where it runs at 0.95
without a second opinion). Besides, when its mean of 5 rises above ARM_CUTOFF, openWakeWord's alexa
model (another network, trained on other data: voxnode/wake/openwakeword.py) scores the last 2.2 s
of audio, and the word is accepted when it says above CONFIRM_CUTOFF within HOLD_SAMPLES of
microWakeWord's rise. It runs only then, from a ring of the audio the detector heard: a few times
an hour outside the words.

Measured (scripts/bench/wake_fusion.py, docs/benchmarks.md#wake-word, issue 24) on the 165 real
recordings at 20/10/5/0 dB and hours of speech, TV and music at full band (G.722, as a room sounds;
stop 38): 11 hours, 7 of them the ones the settings were chosen on and 4 fresh ones. ALONE_CUTOFF 0.98
(stop 37's choice, made on band-limited speech) had 10 + 6 false accepts there (1.5 per hour; alone at
0.95: 2.4); 0.995 has 2 + 0 (0.18 per hour) and hears 94.7 % at 10 dB and 87.0 % at 5 dB (0.98: 95.6 /
88.3; alone at 0.95: 93.8 / 85.5), end to end with the daemon's detector 94.5 / 86.8 % and the same 2
false accepts. No setting of this shape was found within 0.5 per hour on the fresh hours while hearing
95 % at 10 dB (the one chosen on half the speakers, alone 0.995 or 0.7 and 0.05, had 4 in the 4 fresh
hours). openWakeWord alone hears 64.5 % at 10 dB within the false-accept target (band-limited hours).

Licence: openWakeWord's pre-trained models are CC BY-NC-SA 4.0 (non-commercial); voxnode ships
none of them and downloads nothing: the user installs `pyopen-wakeword`, whose wheel holds them.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from voxnode.config.wording import toml_value
from voxnode.errors import ConfigError

from .models import WakeModel
from .openwakeword import CHUNK, OwwScorer, model_files

WORDS = ("alexa",)  # the microWakeWord models with a second opinion (measured for this one only)
# 0.995 (stop 38; was 0.98, chosen on band-limited speech): over 11 wideband hours 0.18 false accepts
# per hour instead of 1.5, 94.7 / 87.0 % heard at 10 / 5 dB instead of 95.6 / 88.3 (wake_fusion.py
# --settings, scripts/bench/results/wake_fusion_wideband_11h.json; end to end wake_confirm_wideband_alone0995.json).
ALONE_CUTOFF = 0.995  # microWakeWord alone, with a second opinion (unless wake.threshold is set)
ARM_CUTOFF = 0.8  # microWakeWord's mean of 5 above this: ask openWakeWord
CONFIRM_CUTOFF = 0.1  # openWakeWord's probability above this: the word
HOLD_SAMPLES = 3200  # 200 ms: the two within this of each other (10 frames of 20 ms)
# Audio scored per request: 28 chunks (2.24 s) hold the context (mel window, 76 mel frames, 16
# embeddings: 26 chunks + 480 samples) of the last 3 probabilities, more than HOLD_SAMPLES back.
RING_CHUNKS = 28


def check_confirm(confirm: str, models: tuple[WakeModel, ...]) -> None:
    """wake.confirm for a stream that listens for `models`: one of them has a second opinion (WORDS) and
    pyopen-wakeword's files for it are there, or ConfigError naming the key. The same words from
    check-config and a reload (voxnode.preflight) as from a stream's start (stream/params.py)."""
    words = [m.name for m in models if m.name in WORDS]
    if not words:
        raise ConfigError(
            f"wake.confirm = {toml_value(confirm)}: gives a second opinion on {', '.join(WORDS)} only; "
            f"the stream listens for {', '.join(m.name for m in models)}"
        )
    for word in words:
        model_files(word)


def with_second_opinion(models: tuple[WakeModel, ...], threshold: float) -> tuple[WakeModel, ...]:
    """The models as they run with a second opinion: those in WORDS at ALONE_CUTOFF, unless the user
    chose a cutoff (wake.threshold > 0)."""
    if threshold > 0:
        return models
    return tuple(replace(m, cutoff=ALONE_CUTOFF) if m.name in WORDS else m for m in models)


class SecondOpinion:
    """Fed every sample the detector hears (`feed`), told each microWakeWord mean (`step`)."""

    def __init__(self, scorer: OwwScorer | None = None):
        self._scorer = scorer or OwwScorer()
        self._ring = np.zeros((RING_CHUNKS + 1) * CHUNK, np.float32)  # circular; one chunk more in progress
        self._fed = 0  # samples so far
        self._armed_at: int | None = None  # sample count when microWakeWord last rose above ARM_CUTOFF
        self._heard_at: int | None = None  # sample count when openWakeWord last said above CONFIRM_CUTOFF
        self._scored_to = 0  # the end of the last chunk scored
        self.requests = 0  # times the ring was scored (benchmarks: its CPU)

    def feed(self, samples: np.ndarray) -> None:
        n = len(samples)
        at = self._fed % len(self._ring)
        first = min(n, len(self._ring) - at)
        self._ring[at : at + first] = samples[:first]
        self._ring[: n - first] = samples[first:]
        self._fed += n

    def step(self, mean: float | None) -> bool:
        """After each feed: `mean`, microWakeWord's latest mean of 5 if it made a call. True: the word."""
        if mean is not None and mean > ARM_CUTOFF:
            self._armed_at = self._fed
        if self._armed_at is None or self._fed - self._armed_at > HOLD_SAMPLES:
            return False
        complete = self._fed // CHUNK * CHUNK
        if complete > self._scored_to:
            self._score(complete)
        return self._heard_at is not None and self._fed - self._heard_at <= HOLD_SAMPLES

    def _score(self, complete: int) -> None:
        start = complete - RING_CHUNKS * CHUNK
        idx = np.arange(start, complete) % len(self._ring)
        audio = np.where(np.arange(start, complete) >= 0, self._ring[idx], 0.0)
        probs, _ = self._scorer.probabilities(audio, pad_chunks=0)
        self.requests += 1
        for i, p in enumerate(probs[::-1]):  # the last is known at `complete`, each before one chunk earlier
            end = complete - i * CHUNK
            if end > self._scored_to and p > CONFIRM_CUTOFF:
                self._heard_at = max(self._heard_at or 0, end)
        self._scored_to = complete

    def reset(self) -> None:
        """After a detection: nothing carries over to the next word."""
        self._armed_at = self._heard_at = None
