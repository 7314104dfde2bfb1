"""scripts/bench/wake.py: a real recording reaches the detector with its own audio around its words,
as in a room, not cut to the frames within 35 dB of its loudest (issue 24, stop 36)."""

from __future__ import annotations

import numpy as np
import pytest

from scripts.bench import audio_corpus as ac
from scripts.bench import wake_audio as wa
from scripts.bench import wake_conditions as wc

FOLDER = wa.default_recordings()
pytestmark = pytest.mark.skipif(
    FOLDER is None or not (FOLDER / "alexa" / "198.wav").is_file(),
    reason="no real recordings (../shared/data/wake/alexa, see its README)",
)


def _recording(name: str) -> wa.Recording:
    assert FOLDER is not None
    names = sorted(p.name for p in (FOLDER / "alexa").glob("*.wav"))
    return wa.recordings(FOLDER, "alexa")[names.index(name)]


def test_the_clip_holds_the_breath_into_the_word_in_the_same_noise():
    """198.wav: before the frames the words' cut keeps, 240 ms of breathy onset rising from 58 to 38 dB
    under the file's loudest frame into the "a". The bench's clip holds it right before the words,
    and the noise (seed, length, SNR over the words) is the one the words alone get."""
    rec = _recording("198.wav")
    clip, start, end = wa.recording_in_noise(rec, "pink", 10.0, 1000, music=[])
    alone, start0, end0 = wa.noisy_clip(rec.words, len(rec.words), "pink", 10.0, 1000, [], lead_s=2.0)
    assert (start, end, len(clip)) == (start0, end0, len(alone))
    at, n = int(start * wc.RATE), rec.start  # the 280 ms of the file before its words
    extra = (clip - alone)[at - n : at]  # the same noise in both: what is left is the recording's own audio
    np.testing.assert_allclose(extra, rec.audio[:n], atol=1.0)
    peak = float(np.percentile(ac.frame_levels_db(rec.audio), 99))
    onset = ac.frame_levels_db(extra)[-12:] - peak  # the last 240 ms before the words
    assert onset.max() > -40 and onset[-4:].mean() > onset[:4].mean() + 8  # rising into the word, not silence


def test_the_audio_after_the_words_is_kept_up_to_the_end_of_the_clip():
    """18.wav: its last "a" decays from 35 to 50 dB under its loudest frame over 200 ms after the cut."""
    rec = _recording("18.wav")
    clip, _start, end = wa.recording_in_noise(rec, "hvac", 5.0, 1001, music=[])
    alone, _, _ = wa.noisy_clip(rec.words, len(rec.words), "hvac", 5.0, 1001, [], lead_s=2.0)
    at = int(round(end * wc.RATE))
    kept = min(len(rec.audio) - rec.end, len(clip) - at)
    assert kept > int(0.2 * wc.RATE)
    np.testing.assert_allclose((clip - alone)[at : at + kept], rec.audio[rec.end : rec.end + kept], atol=1.0)
