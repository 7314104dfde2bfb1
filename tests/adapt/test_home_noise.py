"""scripts/adapt/home_noise.py (issue 22): the mixed home noise for a general `voxnode adapt` holds every
kind in adapt's held-out last quarter too, is made of none of the benchmarks' noise material (other
espeak voices and sentences; no held-out Asterisk prompt in its real babble or TV), and every block is
at one level."""

from __future__ import annotations

import numpy as np
import pytest

from scripts.adapt import data, home_noise
from scripts.bench import audio_corpus, speech_corpus


def test_every_kind_in_training_and_in_the_held_out_quarter() -> None:
    kinds = home_noise.block_kinds(20)
    cut = int(len(kinds) * (1 - data.HELD_OUT_NOISE))
    assert set(kinds[:cut]) == set(kinds[cut:]) == set(home_noise.CYCLE)


def test_synthetic_babble_is_not_the_benchmarks() -> None:
    assert not set(home_noise.VOICES) & set(audio_corpus.VOICES)
    assert not set(home_noise.SENTENCES) & set(audio_corpus.BABBLE_TEXT + audio_corpus.SENTENCES)


@pytest.mark.skipif(bool(speech_corpus.missing_packages()), reason="the Asterisk prompts are not installed")
def test_real_babble_leaves_out_every_held_out_prompt() -> None:
    names = {u.name for u in home_noise.babble_prompts()}
    benchmark = {u.name for u in speech_corpus.real_speech(n_asterisk=40) if u.speaker == "allison"}
    assert len(benchmark) == 40 and len(names) > 100
    assert not names & benchmark and not names & data.bundled_held_out_names()


@pytest.mark.skipif(
    bool(speech_corpus.missing_packages()) or not audio_corpus.have_espeak(), reason="needs the corpus and espeak-ng"
)
def test_blocks_at_one_level_and_of_their_kind() -> None:
    x, kinds = home_noise.home_noise(10 * home_noise.BLOCK_S / 60)
    n = int(home_noise.BLOCK_S * data.RATE)
    assert kinds == list(home_noise.CYCLE) and len(x) == len(kinds) * n
    blocks = x.reshape(len(kinds), n).astype(np.float64)
    rms_db = 20 * np.log10(np.sqrt(np.mean(blocks**2, axis=1)) / 32768)
    np.testing.assert_allclose(rms_db, -30.0, atol=0.1)
    # white is flat, pink and HVAC fall with frequency: the share of power above 2 kHz tells them apart
    spec = np.abs(np.fft.rfft(blocks, axis=1)) ** 2
    high = spec[:, int(2000 * n / data.RATE) :].sum(axis=1) / spec.sum(axis=1)
    share = dict(zip(kinds, high, strict=True))
    assert share["white"] > 0.7 and share["pink"] < 0.2 and share["hvac"] < 0.01
