"""scripts/bench/speech_corpus.other_talkers(): Warzone 2100's tutorial narrator from the installed
warzone2100-data, each clip with the caption the game shows for it, at 16 kHz."""

from __future__ import annotations

import re
import shutil
import subprocess
import zipfile

import numpy as np
import pytest

from scripts.bench import speech_corpus as sc

pytestmark = pytest.mark.skipif(
    not sc.WZ_DATA.is_file() or shutil.which("sox") is None,
    reason=f"{sc.WZ_DATA} (warzone2100-data: make deps-corpus) or sox not installed",
)


def _captions() -> dict[str, str]:
    """clip -> caption, read line by line from the game's tutorial script."""
    with zipfile.ZipFile(sc.WZ_DATA) as wz:
        script = wz.read("script/tutorial.js").decode("utf-8")
    out = {}
    for line in script.splitlines():
        clip = re.search(r'"audio": "(tut\d+)\.ogg"', line)
        caption = re.search(r'"message": _\("(.*?)"\)', line)
        if clip and caption:
            out[clip.group(1)] = caption.group(1)
    return out


@pytest.fixture(scope="module")
def talkers() -> list[sc.Utterance]:
    return sc.other_talkers()


def test_each_clip_comes_with_its_caption_less_those_that_are_another_sentence(talkers):
    captions = _captions()
    assert len(captions) == 42  # the captioned clips of warzone2100-data 4.3.3
    got = {u.name.removeprefix("warzone2100/"): u.text for u in talkers}
    assert got == {clip: text for clip, text in captions.items() if clip not in sc.WZ_NOT_CAPTION}
    assert len(got) == 30 and sum(len(t.split()) for t in got.values()) == 274
    assert got["tut1"] == "In this training session you'll learn how to build an effective base"
    assert "tut43" not in got  # "All new units will drive ..." over "This is initially positioned ..."
    assert {(u.speaker, u.source) for u in talkers} == {("wz2100-narrator", "warzone2100-data")}


def test_the_clips_are_the_whole_recordings_at_16_khz(talkers, tmp_path):
    """Each clip is as long as its Ogg file (11.025 kHz) and at a speaking level, not silence."""
    with zipfile.ZipFile(sc.WZ_DATA) as wz:
        for u in talkers[::6]:
            path = tmp_path / "clip.ogg"
            path.write_bytes(wz.read(f"audio/tutorial/{u.name.removeprefix('warzone2100/')}.ogg"))
            info = subprocess.run(["soxi", str(path)], capture_output=True, text=True, check=True).stdout
            assert "Sample Rate    : 11025" in info
            native_s = float(subprocess.run(["soxi", "-D", str(path)], capture_output=True, text=True).stdout)
            assert abs(u.duration_s - native_s) < 0.01, u.name
            assert u.audio.dtype == np.float32
            loudest = max(np.sqrt(np.mean(f**2)) for f in np.array_split(u.audio, len(u.audio) // 320))
            assert 1000 < loudest < 32768, u.name  # speech frames -30..0 dBFS in int16 scale


def test_the_same_clip_comes_out_the_same_every_time(talkers):
    """No dither: sox's default draws new noise for each decode, and tiny.en's errors on the set then moved
    by 3 words from one run to the next."""
    again = sc.other_talkers()
    for u, v in zip(talkers[:5], again[:5], strict=True):
        np.testing.assert_array_equal(u.audio, v.audio)
