"""scripts/bench/wake_rules.py: the detection rules it sweeps and the way it fires, on probabilities made
up to exercise each (the detector's own behaviour is tests/wake's)."""

from __future__ import annotations

import numpy as np

from scripts.bench import wake_rules as wr


def test_each_rule_scores_the_window_it_names():
    p = np.array([0.1, 0.9, 0.5, 0.8, 0.2])
    assert np.allclose(wr.score(p, "mean", 3, 0), [0.5, 2.2 / 3, 0.5])
    assert np.allclose(wr.score(p, "topk", 3, 2), [0.7, 0.85, 0.65])  # the 2 highest of each 3
    assert np.allclose(wr.score(p, "kofn", 3, 3), [0.1, 0.5, 0.2])  # all 3 above: openWakeWord's patience
    assert np.allclose(wr.score(p, "kofn", 3, 1), [0.9, 0.9, 0.8])
    assert len(wr.score(p[:2], "mean", 3, 0)) == 0  # no score until the window is full, as WakeDetector


def test_one_word_fires_once_and_the_next_after_the_refractory_period():
    s = np.zeros(300)
    s[10:15] = 0.99  # one word: five calls above the cutoff
    s[10 + wr.REFRACTORY_CALLS - 1] = 0.99  # inside the refractory period: ignored
    s[10 + wr.REFRACTORY_CALLS] = 0.99  # just after it: a second detection
    assert wr.fires(s, 0.95) == [10, 10 + wr.REFRACTORY_CALLS]
    assert wr.fires(s, 0.99) == []  # above the cutoff, not at it


def test_a_clip_is_accepted_only_by_a_detection_between_the_word_and_late_s_after_it():
    p = np.zeros(100, dtype=np.float32)
    at = np.arange(100) * 3 // 2  # one call per 30 ms: the 20 ms frame it completed in
    p[40:45] = 0.99  # the window of 5 full of it at call 44: frame 66, 1.34 s
    clip = {"skip_silence": (p, at), "start": 1.0, "end": 1.2}
    assert wr.accepted(clip, "skip_silence", "mean", 5, 0, 0.95)
    assert not wr.accepted({**clip, "end": 1.34 - wr.LATE_S - 0.05}, "skip_silence", "mean", 5, 0, 0.95)
    assert not wr.accepted({**clip, "start": 1.4, "end": 1.6}, "skip_silence", "mean", 5, 0, 0.95)


def test_the_split_is_fixed_disjoint_and_whole():
    a, b = wr.split(165)
    assert (a, b) == wr.split(165)
    assert not a & b and a | b == set(range(165)) and len(a) == 82
    assert wr.split(165, 1) != (a, b)


def test_the_cache_holds_every_call_the_detector_averages():
    """wake_scores.raw_scores records each model call's probability: the detector's own averaged
    probability (what scripts/bench/wake.py reads after each frame) is their mean of the last 5."""
    import pytest

    from scripts.bench import audio_corpus as ac
    from scripts.bench import wake_detect as wd
    from scripts.bench import wake_scores as ws

    if not ac.have_espeak():
        pytest.skip("needs espeak-ng and sox (make deps-test)")
    audio = np.concatenate([ac.silence(0.5), ac.at_dbfs(ac.tts("alexa", "en-us", 150), -25), ac.silence(1.0)])
    p, at = ws.raw_scores("alexa", audio)
    means = wr.score(p, "mean", 5, 0)
    assert abs(len(p) - len(audio) / 480) <= 2  # one call per 30 ms (3 feature frames), none missed
    assert means.max() > 0.9  # the word is heard: the comparison below is not of zeros
    assert np.allclose(wd.detect("alexa", audio).series[at[4:]], means, atol=1e-6)
