"""The wake acceptance over several draws of the noise (scripts/bench/wake_confirm.py --draws, issue 24,
stop 43): draw k mixes the same recording, at the same place and SNR, with the noise of another seed;
the figures over the draws are each draw's count, their mean and range, and what the mean lacks."""

from __future__ import annotations

import numpy as np
import pytest

from scripts.bench import audio_corpus as ac
from scripts.bench import wake_audio as wa
from scripts.bench import wake_conditions as wc
from scripts.bench import wake_confirm as wcf

pytestmark = pytest.mark.unit  # make check: needs only the venv (made-up audio, no recordings)


def _recording() -> wa.Recording:
    """A made-up recording: 0.3 s of quiet room noise, 0.6 s of a loud tone (its words), 0.5 s of room noise."""
    rng = np.random.default_rng(7)
    room = lambda s: 30 * rng.standard_normal(int(s * wc.RATE))  # noqa: E731
    t = np.arange(int(0.6 * wc.RATE)) / wc.RATE
    words = 3000 * np.sin(2 * np.pi * 220 * t)
    audio = np.concatenate([room(0.3), words, room(0.5)]).astype(np.float32)
    return wa.Recording(audio, int(0.3 * wc.RATE), int(0.9 * wc.RATE))


def _noise_in(clip: np.ndarray, rec: wa.Recording, start: float) -> np.ndarray:
    """What the mix added: the clip less the recording laid where the clip has its words."""
    clean = wa.placed(rec.words, start, wc.LATE_S + 0.2, rec.context)
    return clip - clean[: len(clip)]


def test_another_draw_is_other_noise_with_the_words_at_the_same_place():
    rec = _recording()
    clip0, start0, end0 = wa.recording_in_noise(rec, "pink", 10.0, 1005, music=[])
    clip2, start2, end2 = wa.recording_in_noise(rec, "pink", 10.0, 1005, music=[], draw=2)
    assert (start2, end2, len(clip2)) == (start0, end0, len(clip0))  # the same lead and length
    added0, added2 = _noise_in(clip0, rec, start0), _noise_in(clip2, rec, start2)
    n = len(clip0)
    seed2 = 1005 + 2 * wc.NOISE_SEED_STEP
    assert np.corrcoef(added2, ac.noise("pink", n, seed=seed2)[:n])[0, 1] > 0.999  # draw 2's seed
    assert np.corrcoef(added0, ac.noise("pink", n, seed=1005)[:n])[0, 1] > 0.999  # draw 0: the record's
    assert abs(np.corrcoef(added0, added2)[0, 1]) < 0.2  # not the same noise
    assert np.isclose(np.std(added2), np.std(added0), rtol=0.02)  # at the same SNR over the words


def test_another_draw_of_music_is_another_track():
    tracks = [np.full(20 * wc.RATE, float(k + 1), np.float32) for k in range(5)]  # track k: samples k + 1
    first = wa.noise_for("music", 1000, 1005, tracks)
    other = wa.noise_for("music", 1000, 1005 + wc.NOISE_SEED_STEP, tracks)
    assert first[0] != other[0]


def _run(at10: int, at5: int, missed: list | None = None) -> dict:
    by = {"20": 650, "10": at10, "5": at5, "0": 400}
    return {"recordings": 165, "confirm": {"accepted_by_snr": by, "missed": missed or []}}


def test_the_figures_over_draws_are_each_draw_their_mean_range_and_shortfall():
    runs = [_run(a, b) for a, b in ((620, 570), (625, 566), (630, 560), (615, 574), (618, 565))]
    out = wcf.over_draws(runs, ("confirm",))["confirm"]
    assert out["10"]["accepted"] == [620, 625, 630, 615, 618]
    assert out["10"]["mean"] == 621.6 and out["10"]["mean_percent"] == 94.18
    assert out["10"]["range_percent"] == [93.2, 95.5]
    assert out["10"]["mean_short_by_trials"] == 5.4  # 95 % of 660 is 627
    assert out["5"]["mean_short_by_trials"] == 0.0  # 567 of 660, 85.9 %: met
    assert "mean_short_by_trials" not in out["20"]  # no target there


def test_a_recording_missed_in_most_draws_is_listed_with_its_misses_per_draw_and_noise():
    a, b = ["1.wav", "babble", 10], ["2.wav", "pink", 10]
    runs = [
        _run(620, 570, [a, ["1.wav", "music", 10], b, ["3.wav", "pink", 5]]),
        _run(620, 570, [a, ["3.wav", "pink", 5]]),
        _run(620, 570, [b, ["3.wav", "pink", 5]]),
        _run(620, 570, [a]),
        _run(620, 570, []),
    ]
    listed = wcf.often_missed(runs, "confirm", 10)
    # 1.wav in 3 of 5 draws; 2.wav in 2 of 5 (not most); 3.wav only at 5 dB
    assert listed == {"1.wav": {"missed_per_draw": [2, 1, 0, 1, 0], "draws_missed_by_noise": {"babble": 3, "music": 1}}}
    assert list(wcf.over_draws(runs, ("confirm",))["confirm"]["often_missed_10dB"]) == ["1.wav"]
