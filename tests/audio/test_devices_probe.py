"""`voxnode devices` probes the PCMs in a child process (audio/devices.py): every child it starts is reaped
and its pipe closed, whether it answered, hung in an ALSA open or never started. Before: a child that did
not say "ready" was killed and left a zombie, and the pipe of every child stayed open."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.daemon.test_process_stop import reaped
from voxnode.audio import devices
from voxnode.errors import AudioDeviceError


@pytest.fixture
def children(monkeypatch) -> list[subprocess.Popen]:
    """Every process the probe starts."""
    started: list[subprocess.Popen] = []

    class Recorded(subprocess.Popen):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            started.append(self)

    monkeypatch.setattr(devices.subprocess, "Popen", Recorded)
    return started


def test_a_probe_hung_in_an_open_is_reaped_and_the_next_device_answers(alsa_dir, children, monkeypatch):
    """vx_fifo (a FIFO with no writer) blocks inside snd_pcm_open: its child is abandoned, a new one
    probes vx_file."""
    monkeypatch.setattr(devices, "PROBE_TIMEOUT_S", 1.0)
    (alsa_dir / "in.raw").write_bytes(b"\0" * 6400)
    found = devices._probe_in_child(["vx_fifo", "vx_file"])
    assert [d.name for d in found] == ["vx_fifo", "vx_file"]
    assert found[0].error == "no answer within 1 s" and found[1].supports_16k, found
    assert len(children) == 2
    assert all(reaped(p) and p.stdout is not None and p.stdout.closed for p in children)


def test_a_probe_that_never_starts_is_an_error_and_is_reaped(tmp_path, children, monkeypatch):
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'not the probe'\nexec sleep 60\n")
    fake.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(fake))
    with pytest.raises(AudioDeviceError, match="could not start the device probe"):
        devices._probe_in_child(["vx_file"])
    assert len(children) == 1
    assert reaped(children[0]) and children[0].returncode is not None  # killed, not left to sleep
    assert children[0].stdout is not None and children[0].stdout.closed


def _devices(voxnode_cmd, tmp_path, conf: str, *args: str, path_extra: str = "") -> subprocess.CompletedProcess:
    (tmp_path / "asound.conf").write_text(conf)
    env = {**os.environ, "ALSA_CONFIG_PATH": path_extra + str(tmp_path / "asound.conf")}
    return subprocess.run(voxnode_cmd + ["devices", *args], capture_output=True, text=True, timeout=60, env=env)


@pytest.mark.parametrize("args", [(), ("--no-probe",)])
def test_an_alsa_configuration_that_does_not_load_is_named_in_one_line(voxnode_cmd, tmp_path, args):
    """Before: "no ALSA capture devices found (is the user in the 'audio' group? ...)", exit 0, under
    ALSA's own two lines."""
    p = _devices(voxnode_cmd, tmp_path, 'pcm.mic {\n type file\n slave.pcm "null"\n', *args)
    assert p.returncode == 1 and p.stdout == "", p
    assert p.stderr.count("\n") == 1 and "audio' group" not in p.stderr, p.stderr
    assert "its configuration does not load" in p.stderr and "_toplevel_:4:0:Unexpected char" in p.stderr
    assert f"ALSA_CONFIG_PATH={tmp_path / 'asound.conf'}" in p.stderr


def test_a_configuration_that_lists_nothing_says_why_default_does_not_open(voxnode_cmd, tmp_path):
    """ALSA_CONFIG_PATH on its own drops alsa.conf: no PCM has a hint, so none is listed."""
    p = _devices(voxnode_cmd, tmp_path, 'pcm.mic { type plug slave.pcm "nosuch" }\n')
    assert p.returncode == 1 and p.stderr.count("\n") == 1 and "audio' group" not in p.stderr, p.stderr
    assert "'default' cannot open" in p.stderr and "(ALSA: Unknown PCM default)" in p.stderr, p.stderr


def test_a_pcm_whose_slave_is_missing_names_the_slave(voxnode_cmd, tmp_path):
    """pyalsaaudio's own words were "No such file or directory [mic]"; ALSA's line names the slave."""
    conf = 'pcm.mic { type plug slave.pcm "nosuch" hint.description "mic" }\n'
    p = _devices(voxnode_cmd, tmp_path, conf, path_extra="/usr/share/alsa/alsa.conf:")
    assert p.returncode == 0 and p.stderr == "", p.stderr
    lines = {line.split(":")[0]: line for line in p.stdout.splitlines()}
    assert lines["mic"] == "mic: cannot open: No such file or directory [mic] (ALSA: Unknown PCM nosuch)", lines
    assert "16 kHz ok" in lines["null"]
