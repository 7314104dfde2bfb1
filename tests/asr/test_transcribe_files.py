"""`voxnode transcribe`: files of any format in, one line per file out, errors named."""

from __future__ import annotations

import io
import itertools
import json
import os
import subprocess
import sys
import wave
from pathlib import Path

import numpy as np
import pytest

from voxnode.asr.transcribe import transcribe_files
from voxnode.asr.wer import wer
from voxnode.asr.windows import MAX_WINDOW_S
from voxnode.audio.wavfile import read_audio, write_wav

from .conftest import POCKETSPHINX, pocketsphinx_utterances

ROOT = Path(__file__).resolve().parents[2]


def run(engine, paths, **kw):
    out, err = io.StringIO(), io.StringIO()
    rc = transcribe_files(engine, [str(p) for p in paths], out=out, err=err, **kw)
    return rc, out.getvalue().splitlines(), err.getvalue().splitlines()


@pytest.fixture(scope="module")
def good_wav():
    wav, ref = pocketsphinx_utterances()[4]  # "he might even have been made amiable himself"
    return wav, ref


def test_good_and_bad_files_mixed(engine, good_wav, tmp_path):
    wav, ref = good_wav
    empty = tmp_path / "empty.wav"
    empty.write_bytes(b"")
    truncated = tmp_path / "truncated.wav"
    truncated.write_bytes(wav.read_bytes()[:30])  # cut inside the fmt chunk
    cut_data = tmp_path / "cut_data.wav"
    cut_data.write_bytes(wav.read_bytes()[:30000])  # data chunk shorter than its header says
    not_audio = tmp_path / "notes.wav"
    not_audio.write_text("shopping list: eggs, milk\n")
    rc, out, err = run(engine, [empty, wav, truncated, not_audio, cut_data])
    assert rc == 1
    assert len(out) == 1 and wer(ref, out[0]) < 0.2
    assert len(err) == 4
    assert "empty.wav" in err[0] and "empty" in err[0]
    assert "truncated.wav" in err[1]
    assert "notes.wav" in err[2] and "not a WAV" in err[2]
    assert "cut_data.wav" in err[3] and "truncated" in err[3]
    assert all(line.startswith("voxnode: error: ") for line in err)  # the CLI's words (before: "voxnode: ")
    assert err[2].endswith("not a WAV file (no RIFF/WAVE header); use --raw for headerless S16_LE 16 kHz audio")


def test_missing_file_and_directory(engine, tmp_path):
    rc, out, err = run(engine, [tmp_path / "nope.wav", tmp_path])
    assert rc == 1 and out == []
    assert "nope.wav" in err[0] and str(tmp_path) in err[1]


def test_all_good_exits_zero_and_json_has_the_fields(engine, good_wav, tmp_path):
    wav, ref = good_wav
    # 44.1 kHz stereo copy: any rate and channel count is accepted.
    audio = read_audio(wav)
    t = np.arange(int(len(audio) * 44100 / 16000))
    stereo = np.interp(t * 16000 / 44100, np.arange(len(audio)), audio)
    path = tmp_path / "stereo44k.wav"
    with wave.open(str(path), "wb") as w:
        w.setnchannels(2)
        w.setsampwidth(2)
        w.setframerate(44100)
        pcm = (np.clip(stereo, -1, 1) * 32767).astype("<i2")
        w.writeframes(np.stack([pcm, pcm], axis=1).tobytes())
    rc, out, err = run(engine, [wav, path], as_json=True)
    assert rc == 0 and err == []
    objs = [json.loads(line) for line in out]
    for obj, name in zip(objs, [wav, path], strict=True):
        assert set(obj) == {
            "file",
            "text",
            "duration_s",
            "encode_ms",
            "decode_ms",
            "tokens",
            "confidence",
            "language",
            "language_prob",
        }
        assert obj["file"] == str(name)
        assert wer(ref, obj["text"]) < 0.2
        assert obj["duration_s"] == pytest.approx(3.29, abs=0.01)
        assert obj["encode_ms"] > 0 and obj["decode_ms"] > 0
        assert all(isinstance(t, int) for t in obj["tokens"]) and obj["confidence"] < 0


def test_raw_s16le(engine):
    raw = POCKETSPHINX / "goforward.raw"  # S16_LE 16 kHz mono: "go forward ten meters"
    rc, out, err = run(engine, [raw], raw=True)
    assert rc == 0 and wer("go forward ten meters", out[0]) <= 0.25


def test_a_recording_of_several_windows_is_transcribed_in_full(engine, espeak_clips, tmp_path):
    """Over 30 s: cut at pauses into windows; every sentence of 60 s (at least three windows of at most
    MAX_WINDOW_S, 28 s: a first, a middle one cut at both ends, a last) comes back. Each window is decoded
    alone (asr/transcribe.py: no prompt or state carried from one to the next), so more windows check
    nothing more; this was 5 minutes (118 s of a 35-minute CI run), then 129 s (55 s at load 7)."""
    pieces, refs = [], []
    clips = [(read_audio(p), text) for p, text in espeak_clips] + [
        (read_audio(w), ref) for w, ref in pocketsphinx_utterances()[:5]
    ]
    seconds = 0.0
    for audio, text in itertools.cycle(clips):  # whole rounds of the nine clips were 43 s each: 129 s
        if seconds >= 60:
            break
        pieces += [audio, np.zeros(int(0.7 * 16000), np.float32)]
        refs.append(text)
        seconds += len(audio) / 16000 + 0.7
    long = np.concatenate(pieces)
    path = tmp_path / "long.wav"
    write_wav(path, long)
    rc, out, err = run(engine, [path], as_json=True)
    assert rc == 0
    obj = json.loads(out[0])
    assert obj["duration_s"] >= 60 > 2 * MAX_WINDOW_S
    assert wer(" ".join(refs), obj["text"]) < 0.2, obj["text"]


def test_cli_subcommand(tmp_path, good_wav):
    wav, ref = good_wav
    bad = tmp_path / "bad.wav"
    bad.write_bytes(b"RIFF\x00\x00\x00\x00WAVEjunk")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "daemon")}
    p = subprocess.run(
        [sys.executable, "-m", "voxnode", "transcribe", "--json", str(wav), str(bad)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert p.returncode == 1
    obj = json.loads(p.stdout.strip().splitlines()[0])
    assert wer(ref, obj["text"]) < 0.2
    assert "bad.wav" in p.stderr


def test_cli_looks_at_the_files_before_it_loads_the_model(tmp_path, good_wav):
    """Before, the speech model loaded first (seconds on a Pi) and a mistyped name waited for it: here
    the config's model cannot load, so a file's line before the model's says the files came first. A
    good file still gets the model's error, naming the config file and the key."""
    config = tmp_path / "c.toml"
    config.write_text('[asr]\nmodel_dir = "/nonexistent/model"\n')
    missing, notes = tmp_path / "missing.wav", tmp_path / "notes.wav"
    notes.write_text("shopping list\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "daemon")}

    def transcribe(*files):
        cmd = [sys.executable, "-m", "voxnode", "transcribe", "--config", str(config), *map(str, files)]
        return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)

    p = transcribe(missing, notes)
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr == (
        f"voxnode: error: {missing}: no such file\n"
        f"voxnode: error: {notes}: not a WAV file (no RIFF/WAVE header); use --raw for headerless S16_LE 16 kHz audio\n"
    ), p.stderr
    p = transcribe(missing, good_wav[0])
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr == (
        f"voxnode: error: {missing}: no such file\n"
        f'voxnode: error: {config}: asr.model_dir = "/nonexistent/model": /nonexistent/model does not exist\n'
    ), p.stderr


def test_cli_prompt_hotwords_and_beam_size(tmp_path):
    """Real recordings where tiny.en hears "clubs" as "close"/"clothes": --prompt fixes the first,
    --hotwords the second (the prompt alone does not); a bad --beam-size is named."""
    ten, queen = POCKETSPHINX / "cards" / "001.wav", POCKETSPHINX / "cards" / "002.wav"  # "ten/four queen of clubs"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "daemon")}

    def transcribe(*args):
        p = subprocess.run(
            [sys.executable, "-m", "voxnode", "transcribe", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        return p.returncode, p.stdout.lower().splitlines(), p.stderr

    rc, plain, err = transcribe(str(ten), str(queen))
    assert rc == 0, err
    assert "clubs" not in plain[0] and "clubs" not in plain[1], plain  # the mistakes
    rc, prompted, err = transcribe("--prompt", "Playing cards. Suits: clubs, diamonds, hearts, spades.", str(ten))
    assert rc == 0 and "clubs" in prompted[0], (prompted, err)
    rc, hot, err = transcribe("--hotwords", "clubs, spades", "--beam-size", "3", str(queen))
    assert rc == 0 and "clubs" in hot[0], (hot, err)
    rc, _, err = transcribe("--beam-size", "0", str(ten))
    assert rc == 1 and err == "voxnode: error: --beam-size 0: must be between 1 and 8\n", err


def test_cli_peak_rss_on_a_5_second_clip_is_under_150_mb(tmp_path):
    """The whole `voxnode transcribe` process, model load included, as the daemon runs it (glibc malloc)."""
    clip = POCKETSPHINX / "librivox" / "sense_and_sensibility_01_austen_64kb-0890.wav"  # 5.3 s
    probe = (
        "import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], capture_output=True); "
        "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "daemon"), "PYTHONMALLOC": "malloc"}
    out = subprocess.run(
        [sys.executable, "-c", probe, sys.executable, "-m", "voxnode", "transcribe", str(clip)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    ).stdout.split()
    assert out[0] == "0"
    peak_mb = int(out[1]) / 1024
    assert 30 < peak_mb <= 150, peak_mb
