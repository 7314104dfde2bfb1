"""scripts/bench/aec.py's wake word over music: each real "alexa" recording reaches the detector whole,
its own audio around its words, as in scripts/bench/wake.py (issue 24, stop 36), with the music's echo
at 0 dB over the words alone."""

from __future__ import annotations

import numpy as np
import pytest

from scripts.bench import aec
from scripts.bench import speech_corpus as sc
from scripts.bench import wake_audio as wa

FOLDER = wa.default_recordings()
pytestmark = pytest.mark.skipif(
    FOLDER is None or not (FOLDER / "alexa" / "198.wav").is_file() or bool(sc.missing_packages()),
    reason="no real recordings (../shared/data/wake/alexa) or no music (make deps-corpus)",
)


def _recording(name: str) -> wa.Recording:
    assert FOLDER is not None
    names = sorted(p.name for p in (FOLDER / "alexa").glob("*.wav"))
    return wa.recordings(FOLDER, "alexa")[names.index(name)]


@pytest.mark.parametrize("name", ["198.wav", "18.wav"])
def test_the_microphone_hears_the_whole_recording_over_the_same_echo(name):
    """198.wav: 280 ms before its words, a breathy onset rising into the "a"; 18.wav: its last "a"
    decaying after them. Both are in the microphone right around the words; the music, its echo and
    the words' place are what the words alone get (the echo's level is set over the words: the same
    as over the whole file in all 165 recordings, whose frames within 30 dB of their loudest are all
    in the words)."""
    rec = _recording(name)
    mic, ref, start, end = aec.wake_mic(rec, 7)
    words_only = wa.Recording(rec.words, 0, len(rec.words))
    mic0, ref0, start0, end0 = aec.wake_mic(words_only, 7)
    assert (start, end, len(mic)) == (start0, end0, len(mic0))
    np.testing.assert_array_equal(ref, ref0)
    at, b = int(start * aec.RATE), int(start * aec.RATE) + len(rec.words)
    before, after = rec.audio[: rec.start], rec.audio[rec.end : rec.end + len(mic) - b]
    assert np.abs(before if name == "198.wav" else after).max() > 100  # not digital silence: it can fail
    extra = mic - mic0  # the same echo in both: what is left is the recording's own audio
    np.testing.assert_allclose(extra[at - len(before) : at], before, atol=0.01)
    np.testing.assert_allclose(extra[b : b + len(after)], after, atol=0.01)
    assert not extra[: at - len(before)].any() and not extra[at:b].any() and not extra[b + len(after) :].any()
