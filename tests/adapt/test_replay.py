"""`voxnode adapt --replay-noise SHARE` (issue 26): that share of the noisy training mixes is made with
generated white/pink noise instead of the room's; 0 leaves every mix as it was drawn before."""

from __future__ import annotations

import numpy as np

from scripts.adapt import data
from scripts.bench import audio_corpus


def _speech() -> np.ndarray:
    t = np.arange(2 * data.RATE) / data.RATE
    return (3000 * np.sin(2 * np.pi * 220 * t) * (np.sin(2 * np.pi * 2 * t) > 0)).astype(np.float32)


def _mixes(replay: float, n: int = 400) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(mixes, their noise) with a silent room: a room mix adds nothing, a replayed one adds its noise."""
    rng = np.random.default_rng(0)
    audio, room = _speech(), np.zeros(10 * data.RATE, np.float32)
    mixes = [data.training_mix(audio, room, rng, replay) for _ in range(n)]
    return mixes, [m - audio for m in mixes]


def test_no_replay_draws_what_it_drew_before() -> None:
    rng_a, rng_b = np.random.default_rng(3), np.random.default_rng(3)
    audio = _speech()
    room = audio_corpus.noise("babble", 10 * data.RATE, seed=1)
    for _ in range(20):
        before = data.mixed(audio, room, data.training_snr(rng_a), rng_a)
        np.testing.assert_array_equal(data.training_mix(audio, room, rng_b, 0.0), before)


def test_the_share_of_noisy_mixes_with_generated_noise() -> None:
    _, added = _mixes(0.0)
    assert all(np.abs(a).max() == 0 for a in added)  # the silent room: nothing added
    _, added = _mixes(0.5)
    replayed = np.mean([np.abs(a).max() > 0 for a in added])
    # half of the noisy mixes (1 - CLEAN_SHARE of all); 400 draws: +-0.06 is over 3 sigma
    assert abs(replayed - 0.5 * (1 - data.CLEAN_SHARE)) < 0.06, replayed
    _, added = _mixes(1.0)
    replayed_all = np.mean([np.abs(a).max() > 0 for a in added])
    assert abs(replayed_all - (1 - data.CLEAN_SHARE)) < 0.06, replayed_all


def test_replayed_noise_is_white_and_pink() -> None:
    _, added = _mixes(1.0)
    slopes = []
    for a in (a for a in added if np.abs(a).max() > 0):
        spec = np.abs(np.fft.rfft(a)) ** 2
        f = np.fft.rfftfreq(len(a), 1 / data.RATE)
        lo, hi = spec[(f > 200) & (f < 400)].mean(), spec[(f > 3200) & (f < 6400)].mean()
        slopes.append(10 * np.log10(lo / hi))
    flat, tilted = sum(s < 3 for s in slopes), sum(s > 6 for s in slopes)
    assert flat + tilted == len(slopes) and flat > 0.3 * len(slopes) and tilted > 0.3 * len(slopes), slopes[:20]
