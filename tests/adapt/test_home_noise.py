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


@pytest.fixture
def no_noise_made(monkeypatch):
    """main() with the generator replaced: a refused option must stop before it (20 minutes by default)."""
    made: list[float] = []

    def fake(minutes, seed=home_noise.SEED_BASE):
        made.append(minutes)
        return np.zeros(int(home_noise.BLOCK_S * data.RATE), dtype=np.float32), ["white"]

    monkeypatch.setattr(home_noise, "home_noise", fake)
    monkeypatch.setattr(audio_corpus, "have_espeak", lambda: True)
    monkeypatch.setattr(speech_corpus, "missing_packages", lambda: [])
    return made


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--out", ""], "argument --out: is empty; name the WAV file to write"),
        (["--out", "{tmp}"], "argument --out: {tmp} is a folder; name the WAV file to write"),
        (["--out", "{tmp}/no/x.wav"], "argument --out: {tmp}/no/x.wav: the folder {tmp}/no does not exist"),
        (["--out", "{tmp}/x.wav", "--minutes", "0"], "argument --minutes: 0 is not a length; give minutes above 0"),
        (["--out", "{tmp}/x.wav", "--minutes", "nan"], "argument --minutes: nan is not a length; give minutes above 0"),
        (["--out", "{tmp}/x.wav", "--seed", "-1"], "argument --seed: -1 is below 0"),
    ],
)
def test_bad_options_are_refused_on_one_line_before_the_noise_is_made(argv, said, tmp_path, no_noise_made, capsys):
    """Before: `--out ""` (Path("") is ".") and a folder gave wave's traceback after the noise was made;
    --minutes 0 wrote one block; nan a traceback; --seed -1 numpy's traceback."""
    with pytest.raises(SystemExit) as e:
        home_noise.main([a.format(tmp=tmp_path) for a in argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and err[-1] == f"home_noise: error: {said.format(tmp=tmp_path)}", err
    assert not no_noise_made


def test_a_file_that_cannot_be_written_is_one_line(no_noise_made, capsys):
    with pytest.raises(SystemExit) as e:
        home_noise.main(["--out", "/proc/home-noise.wav", "--minutes", "0.25"])
    assert e.value.code == "home_noise: cannot write /proc/home-noise.wav: No such file or directory"
    assert no_noise_made == [0.25] and "Traceback" not in capsys.readouterr().err
