"""The `voxnode` command line: run, devices, demo, --version, and its one-line errors."""

import argparse
import json
import os
import re
import subprocess
import sys
import threading

import numpy as np
import pytest

from voxnode.audio.wavfile import write_wav
from voxnode.cli import build_parser


def test_run_on_a_file_prints_level_json(tmp_path, voxnode_cmd):
    wav = tmp_path / "tone.wav"
    subprocess.run(
        ["sox", "-n", "-r", "16000", "-c", "1", "-b", "16", str(wav), "synth", "2.0", "sine", "440", "vol", "0.5"],
        check=True,
    )
    p = subprocess.run(
        voxnode_cmd + ["run", "--file", str(wav), "--stdout", "--levels"], capture_output=True, text=True, timeout=30
    )
    assert p.returncode == 0, p.stderr
    events = [json.loads(line) for line in p.stdout.splitlines()]
    levels = [e for e in events if e["type"] == "level"]
    assert len(levels) == 2 and all(e["stream"] == "mic" for e in levels)
    assert all(-12 < e["rms_dbfs"] < -6 for e in levels), levels  # a 0.5 sine is -9 dBFS


def test_run_with_missing_device_reports_it(voxnode_cmd):
    p = subprocess.run(
        voxnode_cmd + ["run", "--device", "no_such_pcm", "--duration", "1.5"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert p.returncode == 0
    said = "cannot open ALSA capture device 'no_such_pcm': No such file or directory (ALSA: Unknown PCM no_such_pcm)"
    assert said in p.stderr and "retrying in" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr and "ALSA lib" not in p.stderr  # alsa-lib's own line is in ours


def test_run_with_an_alsa_configuration_that_does_not_load_says_so(tmp_path, voxnode_cmd):
    """Before: "cannot open ALSA capture device 'default': Invalid argument; retrying", which blamed the
    device, under ALSA's own lines."""
    (tmp_path / "asound.conf").write_text('pcm.mic {\n type file\n slave.pcm "null"\n')  # no closing brace
    env = {**os.environ, "ALSA_CONFIG_PATH": str(tmp_path / "asound.conf")}
    p = subprocess.run(voxnode_cmd + ["run", "--duration", "1.5"], capture_output=True, text=True, timeout=30, env=env)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    said = "cannot open ALSA capture device 'default': Invalid argument: the ALSA configuration does not load ("
    assert said in p.stderr and "retrying in" in p.stderr, p.stderr
    # Which file, in alsa-lib's words, on the same line (before: on lines of its own above it).
    line = next(x for x in p.stderr.splitlines() if said in x)
    assert f"(ALSA: _toplevel_:4:0:Unexpected char; {tmp_path / 'asound.conf'} may be old or corrupted" in line, line
    assert "ALSA lib" not in p.stderr


def test_device_override_with_streams_is_a_clear_error(tmp_path, voxnode_cmd):
    cfg = tmp_path / "c.toml"
    cfg.write_text('[[streams]]\nname = "a"\ndevice = "x"\n')
    p = subprocess.run(voxnode_cmd + ["run", "--config", str(cfg), "--device", "y"], capture_output=True, text=True)
    assert p.returncode == 1 and "--device 'y' cannot be used with [[streams]]" in p.stderr


def test_device_with_file_is_a_clear_error(tmp_path, voxnode_cmd):
    """Before: --device was ignored without a word and the file played."""
    wav = tmp_path / "s.wav"
    write_wav(wav, np.zeros(16000, dtype=np.float32))
    p = subprocess.run(
        voxnode_cmd + ["run", "--device", "mic", "--file", str(wav), "--stdout"], capture_output=True, text=True
    )
    assert p.returncode == 1 and p.stdout == "", p
    said = "--device 'mic' and --file cannot be used together: --file plays the file instead of capturing"
    assert p.stderr == f"voxnode: error: {said}; leave one out\n", p.stderr


def test_devices_lists_and_probes_test_pcms(voxnode_cmd, alsa_dir):
    p = subprocess.run(voxnode_cmd + ["devices", "--no-probe"], capture_output=True, text=True, timeout=30)
    # The names alone: before, "vx_file: rates ; formats ; ?", as if it had been opened and said nothing.
    assert p.returncode == 0 and "vx_file" in p.stdout.splitlines() and "rates" not in p.stdout, p.stdout
    (alsa_dir / "in.raw").write_bytes(b"\0" * 6400)
    p = subprocess.run(voxnode_cmd + ["devices"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    lines = {line.split(":")[0]: line for line in p.stdout.splitlines()}
    assert "16 kHz ok" in lines["vx_file"] and "S16_LE" in lines["vx_file"]
    assert "no answer within" in lines["vx_fifo"]  # a FIFO with no writer blocks ALSA's open


def test_demo_plays_the_bundled_clip_through_alsa(voxnode_cmd):
    p = subprocess.run(voxnode_cmd + ["demo", "--stdout"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "capturing from 'voxnode_demo'" in p.stderr
    events = [json.loads(line) for line in p.stdout.splitlines()]
    levels = [e for e in events if e["type"] == "level"]
    loud = [e for e in levels if e["rms_dbfs"] > -40]
    quiet = [e for e in levels if e["rms_dbfs"] < -80]
    assert len(loud) >= 4 and len(quiet) >= 1, levels  # ~5 s of speech, lead-in and tail silence
    finals = [e["text"].lower() for e in events if e["type"] == "final"]
    # Two commands with a 440 ms pause between them: one final each since the end-of-turn model
    # (P(finished) 0.96 after "kitchen lights"), one final with `vad.end_of_turn = "off"`. Either
    # way every word, in order, and nothing else: the product's name too (the demo's hotword; without
    # it the first thing a new user read was "Hey Microsoft").
    words = re.findall(r"[a-z0-9]+", " ".join(finals))
    assert 1 <= len(finals) <= 2 and "kitchen lights" in finals[0] and "timer" in finals[-1], finals
    assert " ".join(words) == "hey voxnode turn on the kitchen lights set a timer for 10 minutes", finals
    assert "hotword 'Voxnode'" in p.stderr


def test_version(voxnode_cmd):
    from voxnode import __version__

    p = subprocess.run(voxnode_cmd + ["--version"], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.strip() == f"voxnode {__version__}"


@pytest.mark.parametrize("bad", ["nan", "-1", "0", "inf"])
def test_run_duration_must_be_a_positive_number_of_seconds(bad, capsys):
    """Before: nan ran for ever (no deadline compared true), -1 stopped at once."""
    with pytest.raises(SystemExit) as e:
        build_parser().parse_args(["run", "--duration", bad])
    err = capsys.readouterr().err
    assert e.value.code == 2 and f"argument --duration: '{bad}' must be a positive number of seconds" in err, err
    assert build_parser().parse_args(["run", "--duration", "1.5"]).duration == 1.5


@pytest.mark.parametrize(("bad", "why"), [("-1", "must be 0 or more"), ("x", "is not a whole number")])
def test_fleet_backlog_max_must_be_a_count(bad, why, capsys):
    """Before: -1 was taken, and every node then had a problem (a backlog of 0 is more than -1)."""
    with pytest.raises(SystemExit) as e:
        build_parser().parse_args(["fleet", "--backlog-max", bad])
    err = capsys.readouterr().err
    assert e.value.code == 2 and f"argument --backlog-max: '{bad}' {why}" in err, err
    assert build_parser().parse_args(["fleet", "--backlog-max", "0"]).backlog_max == 0


EMPTY_CASES = {
    # Before: --device "" and --file "" were ignored (run captured from the default PCM, exit 0),
    # --clip "" played the bundled clip, --config "" said "config file . is a directory".
    "run --device": (["run", "--device", "", "--duration", "1"], '--device "": is empty; name an ALSA capture PCM'),
    "run --file": (["run", "--file", "", "--duration", "1"], '--file "": is empty; name a WAV file'),
    "demo --clip": (["demo", "--clip", "", "--stdout"], '--clip "": is empty; name a WAV file'),
    "check-config --config": (["check-config", "--config", ""], '--config "": is empty; name a config file'),
    "fleet --config": (["fleet", "--config", "", "--once"], '--config "": is empty; name a config file'),
}


@pytest.mark.parametrize("case", list(EMPTY_CASES))
def test_an_empty_option_is_refused_on_one_line(case, voxnode_cmd):
    argv, said = EMPTY_CASES[case]
    p = subprocess.run([*voxnode_cmd, *argv], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and p.stderr.startswith(f"voxnode: error: {said}"), p.stderr
    assert len(p.stderr.splitlines()) == 1 and p.stdout == "", (p.stdout, p.stderr)


def test_transcribe_says_a_file_name_is_empty(tmp_path, voxnode_cmd):
    """Before: `voxnode transcribe ""` said ".: is a directory, not an audio file"."""
    p = subprocess.run([*voxnode_cmd, "transcribe", "", str(tmp_path / "x.wav")], capture_output=True, text=True)
    assert p.returncode == 1, p.stderr
    assert p.stderr.splitlines() == [
        'voxnode: error: "": the file name is empty',
        f"voxnode: error: {tmp_path / 'x.wav'}: no such file",
    ], p.stderr


def test_every_string_option_is_refused_empty_or_means_something_empty():
    """A string option added later is put in cli.NOT_EMPTY (its empty value refused) or MAY_BE_EMPTY."""
    from voxnode.cli import MAY_BE_EMPTY, NOT_EMPTY

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    strings = {
        a.dest
        for name, sub in commands.items()
        if name != "adapt"  # every argument is the adapt tool's (voxnode.adapt_tool)
        for a in sub._actions
        if a.type is None and a.option_strings and isinstance(a, argparse._StoreAction)
    }
    assert strings == set(NOT_EMPTY) | set(MAY_BE_EMPTY), strings


def test_a_reader_that_has_gone_is_no_traceback(voxnode_cmd):
    """`voxnode check-config --reference | head -1`: the pipe's reader closes before the output is written
    (here before the child has even started). Before: a BrokenPipeError traceback."""
    p = subprocess.Popen(
        [*voxnode_cmd, "check-config", "--reference"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert p.stdout is not None
    p.stdout.close()
    _, err = p.communicate(timeout=60)
    assert p.returncode == 1 and err == "", err


# Ctrl-C (SIGINT to itself) the moment the command line's modules start loading voxnode.config;
# then `voxnode` run as `python -m voxnode` or as the installed script (pyproject: voxnode.__main__:run).
# SIGINT as a foreground job has it, whatever this test's runner has (a script's `pytest &` ignores it).
CTRL_C_WHILE_LOADING = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
def ctrl_c(event, args, sent=[]):
    if event == "import" and args[0] == "voxnode.config" and not sent:
        sent.append(1)
        os.kill(os.getpid(), signal.SIGINT)
sys.addaudithook(ctrl_c)
"""
LAUNCH = {
    "python -m voxnode": "import runpy; runpy.run_module('voxnode', run_name='__main__', alter_sys=True)",
    "voxnode script": "from voxnode.__main__ import run; sys.exit(run())",
}


@pytest.mark.parametrize("how", sorted(LAUNCH))
def test_ctrl_c_while_the_modules_load_is_exit_130_without_a_traceback(tmp_path, how):
    """Before: a KeyboardInterrupt traceback from inside the imports (or, raised in an import lock's
    weakref callback, only "Exception ignored": the live `voxnode fleet` then ran on)."""
    cfg = tmp_path / "c.toml"
    cfg.write_text('[mqtt]\nhost = "127.0.0.1"\nport = 9\n')
    cmd = ["fleet", "--config", str(cfg)]  # past the loading: nothing listens on port 9, exit 1
    p = subprocess.run(
        [sys.executable, "-c", CTRL_C_WHILE_LOADING + LAUNCH[how], *cmd], capture_output=True, text=True, timeout=60
    )
    assert p.returncode == 130 and p.stderr == "" and p.stdout == "", p.stderr


RUN_NOT_WAV = "not a WAV file (no RIFF/WAVE header); for headerless S16_LE 16 kHz audio, give the file a .raw name"


# Before, bad.wav's line ended "use --raw for headerless S16_LE 16 kHz audio": a transcribe flag run lacks.
# Before, a WAV of 0 frames passed the check, and run logged the error after the models and exited 0.
@pytest.mark.parametrize(
    ("name", "why"),
    [("missing.wav", "no such file"), ("bad.wav", RUN_NOT_WAV), ("silent.wav", "WAV has no audio samples")],
)
def test_run_with_a_bad_file_says_so_before_loading_the_models(tmp_path, voxnode_cmd, name, why):
    """Before: the one line came after Whisper and the end-of-turn model had loaded (seconds on a Pi)."""
    f = tmp_path / name
    if name == "bad.wav":
        f.write_bytes(b"hello")
    if name == "silent.wav":
        write_wav(f, np.zeros(0, dtype=np.float32))
    p = subprocess.run(voxnode_cmd + ["run", "--file", str(f)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert p.stderr.startswith(f"voxnode: error: {f}: {why}") and p.stderr.count("\n") == 1, p.stderr


def test_a_failed_start_says_only_its_error(tmp_path, voxnode_cmd):
    """A start that fails after the end-of-turn model's thread started (a pipe given to --file is read
    at the stream's start, after the models): the error's one line and no warning. Before: every failed
    start printed "end-of-turn model: its thread did not stop in time" first, as the rollback stopped
    what had started with a deadline of now."""
    fifo = tmp_path / "talk.wav"
    os.mkfifo(fifo)
    threading.Thread(target=lambda: fifo.write_bytes(b"hello, this is not audio"), daemon=True).start()
    env = {**os.environ, "PYTHONMALLOC": "malloc"}  # as the unit and `make test` run it (else a warning)
    run = voxnode_cmd + ["run", "--file", str(fifo)]
    p = subprocess.run(run, capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert "did not stop in time" not in p.stderr and "WARNING" not in p.stderr, p.stderr
    assert p.stderr.splitlines()[-1].startswith(f"voxnode: error: {fifo}: not a WAV file"), p.stderr
