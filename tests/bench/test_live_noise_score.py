"""scripts/bench/live_noise_score.py: the end of speech -> final latency of the finals that end a
sentence (a closing mark), issue 23's target set, beside that of every final."""

from __future__ import annotations

import numpy as np

from scripts.bench import live_noise_audio as la
from scripts.bench.live_noise_score import latencies


def utt(first: int, last: int) -> la.Utt:
    """Speech in frames [first, last)."""
    return la.Utt("u", "", first * la.FRAME, last * la.FRAME, first * la.FRAME, last * la.FRAME)


def test_sentence_latency_counts_only_the_finals_with_a_closing_mark():
    utts = [utt(10, 40), utt(60, 90), utt(110, 140)]
    track = la.Track(la.Condition.parse("clean"), np.zeros(160 * la.FRAME, np.float32), utts, None)
    wt = 1000.0 + 0.02 * np.arange(160)  # when the pacer wrote each frame
    # Each final read `after` s past the write of its utterance's last speech frame.
    heard = [("Hello there.", 0.30), ("and then", 0.90), ("Good night!", 0.50)]
    finals, spans = [], []
    for k, ((text, after), u) in enumerate(zip(heard, utts, strict=True)):
        finals.append((wt[u.speech_end // la.FRAME - 1] + after, {"text": text, "latency_ms": 0}))
        spans.append((u.speech_start, u.speech_end, [k]))
    lat_all, lat_sentence, _, offsets = latencies(track, finals, spans, [[0], [1], [2]], wt)
    assert np.allclose(lat_all, [300, 900, 500])
    assert np.allclose(lat_sentence, [300, 500])  # the unclosed one's 900 left out
    assert offsets == [0, 0, 0]
