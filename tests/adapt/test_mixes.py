"""The training mixes' SNR spread and clean share (`voxnode adapt --snr LOW:HIGH --clean-share SHARE`,
scripts/adapt/data.py): the defaults draw exactly what they drew before the options existed, and other
values give the range and share asked for."""

from __future__ import annotations

import numpy as np
import pytest

from scripts.adapt import data


def test_snr_range_parses_and_refuses_in_one_line() -> None:
    assert data.snr_range("-5:20") == (-5.0, 20.0)
    assert data.snr_range("0:0") == (0.0, 0.0)
    for bad in ("5", "10:0", "a:5", "-40:0", "0:70", ""):
        with pytest.raises(ValueError, match="LOW:HIGH in dB") as e:
            data.snr_range(bad)
        assert "\n" not in str(e.value)


def test_the_old_defaults_draw_what_they_drew_before() -> None:
    """`--snr=-5:20 --speed 0` (the defaults until 2026-12-06 morning) reproduce the earlier runs' mixes."""
    rng_a, rng_b = np.random.default_rng(5), np.random.default_rng(5)
    for _ in range(200):
        before = None if rng_a.random() < 0.15 else float(rng_a.uniform(-5.0, 20.0))  # the code before the options
        assert data.training_snr(rng_b, (-5.0, 20.0)) == before
    # the defaults since: docs/adapt.md "Music at 0 dB in every seed"
    assert data.TRAIN_SNR_DB == (-10.0, 10.0) and data.CLEAN_SHARE == 0.15 and data.TRAIN_SPEED == 0.1


def test_range_and_clean_share_are_the_ones_asked_for() -> None:
    rng = np.random.default_rng(0)
    draws = [data.training_snr(rng, (-5.0, 10.0), 0.3) for _ in range(2000)]
    snrs = np.array([d for d in draws if d is not None])
    assert abs(1 - len(snrs) / len(draws) - 0.3) < 0.035  # 2000 draws: 3.4 sigma
    assert snrs.min() >= -5.0 and snrs.max() <= 10.0
    assert snrs.min() < -4.5 and snrs.max() > 9.5 and abs(snrs.mean() - 2.5) < 0.5
    assert all(d is not None for d in (data.training_snr(rng, (0.0, 5.0), 0.0) for _ in range(100)))


def test_training_mix_uses_the_range() -> None:
    """A mix at a drawn SNR: speech-frame SNR of (mix - speech) against the speech, within the range."""
    from scripts.bench import audio_corpus

    t = np.arange(2 * data.RATE) / data.RATE
    speech = (3000 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)
    room = audio_corpus.noise("pink", 10 * data.RATE, seed=1)
    rng = np.random.default_rng(1)
    for _ in range(20):
        mix = data.training_mix(speech, room, rng, 0.0, (-5.0, -5.0), 0.0)
        noise = mix - speech
        snr = 10 * np.log10(np.mean(speech**2) / np.mean(noise**2))
        assert abs(snr - -5.0) < 1.5, snr


def test_speed_perturbation_changes_tempo_and_pitch_together() -> None:
    t = np.arange(2 * data.RATE) / data.RATE
    tone = (3000 * np.sin(2 * np.pi * 200 * t)).astype(np.float32)
    for factor in (0.9, 1.1):
        out = data.speed_perturbed(tone, factor)
        assert abs(len(out) - len(tone) / factor) <= 2
        spec = np.abs(np.fft.rfft(out))
        peak = np.fft.rfftfreq(len(out), 1 / data.RATE)[int(np.argmax(spec))]
        assert abs(peak - 200 * factor) < 2, (factor, peak)
    assert data.speed_perturbed(tone, 1.0) is tone


def test_training_mixes_are_played_at_speeds_within_the_spread() -> None:
    speech = np.ones(data.RATE, np.float32) * 1000
    room = np.zeros(10 * data.RATE, np.float32)
    rng = np.random.default_rng(2)
    lengths = [len(data.training_mix(speech, room, rng, speed=0.1)) for _ in range(300)]
    assert min(lengths) >= data.RATE / 1.1 - 2 and max(lengths) <= data.RATE / 0.9 + 2
    assert min(lengths) < data.RATE / 1.08 and max(lengths) > data.RATE / 0.92  # the whole spread is used
    rng = np.random.default_rng(2)
    assert {len(data.training_mix(speech, room, rng)) for _ in range(50)} == {data.RATE}  # speed 0: untouched
