"""scripts/bench/speech_corpus.other_talkers(): Warzone 2100's tutorial narrator from the installed
warzone2100-data, each clip with the caption the game shows for it, and OpenArena's "rott" team-chat voice
from openarena-data, each clip with its chat text; at 16 kHz, the same every time."""

from __future__ import annotations

import re
import shutil
import subprocess
import zipfile

import numpy as np
import pytest

from scripts.bench import speech_corpus as sc

pytestmark = pytest.mark.skipif(shutil.which("sox") is None, reason="sox not installed (make deps-test)")
needs_wz = pytest.mark.skipif(not sc.WZ_DATA.is_file(), reason=f"{sc.WZ_DATA}: warzone2100-data (make deps-corpus)")
needs_oa = pytest.mark.skipif(not sc.OA_DATA.is_file(), reason=f"{sc.OA_DATA}: openarena-data (make deps-corpus)")


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


def _of(talkers: list[sc.Utterance], source: str) -> list[sc.Utterance]:
    return [u for u in talkers if u.source == source]


def _seconds(path) -> float:
    return float(subprocess.run(["soxi", "-D", str(path)], capture_output=True, text=True, check=True).stdout)


@needs_wz
def test_each_clip_comes_with_its_caption_less_those_that_are_another_sentence(talkers):
    captions = _captions()
    talkers = _of(talkers, "warzone2100-data")
    assert len(captions) == 42  # the captioned clips of warzone2100-data 4.3.3
    got = {u.name.removeprefix("warzone2100/"): u.text for u in talkers}
    assert got == {clip: text for clip, text in captions.items() if clip not in sc.WZ_NOT_CAPTION}
    assert len(got) == 30 and sum(len(t.split()) for t in got.values()) == 274
    assert got["tut1"] == "In this training session you'll learn how to build an effective base"
    assert "tut43" not in got  # "All new units will drive ..." over "This is initially positioned ..."
    assert {(u.speaker, u.source) for u in talkers} == {("wz2100-narrator", "warzone2100-data")}


@needs_wz
def test_the_clips_are_the_whole_recordings_at_16_khz(talkers, tmp_path):
    """Each clip is as long as its Ogg file (11.025 kHz) and at a speaking level, not silence."""
    with zipfile.ZipFile(sc.WZ_DATA) as wz:
        for u in _of(talkers, "warzone2100-data")[::6]:
            path = tmp_path / "clip.ogg"
            path.write_bytes(wz.read(f"audio/tutorial/{u.name.removeprefix('warzone2100/')}.ogg"))
            info = subprocess.run(["soxi", str(path)], capture_output=True, text=True, check=True).stdout
            assert "Sample Rate    : 11025" in info
            assert abs(u.duration_s - _seconds(path)) < 0.01, u.name
            assert u.audio.dtype == np.float32
            loudest = max(np.sqrt(np.mean(f**2)) for f in np.array_split(u.audio, len(u.audio) // 320))
            assert 1000 < loudest < 32768, u.name  # speech frames -30..0 dBFS in int16 scale


@needs_wz
def test_the_same_clip_comes_out_the_same_every_time(talkers):
    """No dither: sox's default draws new noise for each decode, and tiny.en's errors on the set then moved
    by 3 words from one run to the next."""
    again = sc.other_talkers()
    for u, v in zip(talkers[:5], again[:5], strict=True):
        np.testing.assert_array_equal(u.audio, v.audio)


@needs_oa
def test_each_team_chat_clip_once_with_its_chat_text(talkers, tmp_path):
    """male1.voice names each rott clip with the text the game shows; a clip named twice comes once, with
    the first text; one it names that the pk3 lacks (okay.ogg) and the clips it never names are left out."""
    with zipfile.ZipFile(sc.OA_DATA) as pk3:
        voice = pk3.read("scripts/male1.voice").decode("utf-8")
        files = {n.split("/")[-1].removesuffix(".ogg") for n in pk3.namelist() if n.startswith("sound/voices/rott/")}
        first: dict[str, str] = {}
        for line in voice.splitlines():
            path = line.split()[0] if line.strip() else ""
            if path.startswith("sound\\voices\\rott\\"):  # then the text in quotes (a comment may follow)
                first.setdefault(path.split("\\")[-1].removesuffix(".ogg"), line.split('"')[1])
        rott = _of(talkers, "openarena-data")
        got = {u.name.removeprefix("openarena/"): u.text for u in rott}
        want = {clip: text for clip, text in first.items() if clip in files}
        assert (want["imgoingin"], want["imcampinghere"]) == ("I'm goin' in", "I'm campin here")
        want |= {"imgoingin": "I'm going in", "imcampinghere": "I'm camping here"}  # as the scorer spells them
        assert got == want
        assert len(got) == 32 and got["haveflag"] == "I have the flag!" and "okay" in first and "okay" not in got
        assert got["wanttoattack"] == "I want to attack!"  # named twice, "I want to attack." the second time
        assert "rogerthat" in files and "rogerthat" not in got  # no text for it
        assert {u.speaker for u in rott} == {"openarena-rott"}
        for u in rott[::8]:
            path = tmp_path / "clip.ogg"
            path.write_bytes(pk3.read(f"sound/voices/rott/{u.name.removeprefix('openarena/')}.ogg"))
            assert abs(u.duration_s - _seconds(path)) < 0.01, u.name
