"""A capture PCM that goes through a sound server (audio/pcm_route.py): its failed open says which server and
what to do. On a Raspberry Pi OS desktop ALSA's `default` is PipeWire's, which voxnode.service cannot reach:
before, the daemon said only "cannot open ALSA capture device 'default': Host is down" at every retry.

Real alsa-lib throughout, each case in a child process with its own ALSA_CONFIG_PATH (alsa-lib reads its
configuration once per process); the PulseAudio plugin is the real one (libasound2-plugins, a test
dependency), with no server to reach. PipeWire's plugin is not installed where the tests run: its case names a
plugin library that does not exist, as a system without pipewire-alsa would."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.pulse_room import PulseServer, have_pulseaudio

CONF = """</usr/share/alsa/alsa.conf>
pcm_type.pipewire { lib "/nonexistent/libasound_module_pcm_pipewire.so" }
pcm.!default { type pipewire }
pcm.talk { type pulse }
pcm.plugged { type plug slave.pcm "talk" }
pcm.sides { type asym capture.pcm "plugged" playback.pcm "null" }
pcm.inline { type plug slave { pcm { type pulse } } }
pcm.card { type plug slave.pcm "null" }
pcm.loop1 { type plug slave.pcm "loop2" }
pcm.loop2 { type plug slave.pcm "loop1" }
"""

CHILD = """
import json, sys
from voxnode.audio.alsa_open import open_capture
from voxnode.audio.pcm_route import plugin_chain
from voxnode.errors import AudioDeviceError
names = sys.argv[1:]
errors = {}
for name in names:
    try:
        open_capture(name, 1, 4, "alsa").pcm.close()
        errors[name] = ""
    except AudioDeviceError as e:
        errors[name] = str(e)
print(json.dumps({"chains": {n: plugin_chain(n) for n in names}, "errors": errors}))
"""


def _child(tmp_path, *names: str, session: bool = False) -> dict:
    (tmp_path / "asound.conf").write_text(CONF)
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}  # as voxnode.service runs
    env.update(ALSA_CONFIG_PATH=str(tmp_path / "asound.conf"), PULSE_SERVER=f"unix:{tmp_path}/no-server")
    if session:
        env["XDG_RUNTIME_DIR"] = str(tmp_path)
    p = subprocess.run([sys.executable, "-c", CHILD, *names], capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.splitlines()[-1])


def test_the_chain_of_plugins_is_read_from_alsas_configuration(tmp_path):
    got = _child(tmp_path, "default", "talk", "plugged", "sides", "inline", "card", "loop1", "nosuch")["chains"]
    assert got == {
        "default": ["pipewire"],
        "talk": ["pulse"],
        "plugged": ["plug", "pulse"],
        "sides": ["asym", "plug", "pulse"],
        "inline": ["plug", "pulse"],
        "card": ["plug", "null"],
        "loop1": ["plug"] * 8,  # alsa-lib refuses the loop itself at open; the walk stops
        "nosuch": [],
    }


def test_a_service_that_cannot_reach_the_sound_server_is_told_so_and_what_to_do(tmp_path):
    errors = _child(tmp_path, "plugged", "sides", "card")["errors"]
    for name in ("plugged", "sides"):
        assert errors[name].startswith(f"cannot open ALSA capture device {name!r}: Connection refused"), errors
        assert "(ALSA: PulseAudio: Unable to connect: Connection refused)" in errors[name]
        assert errors[name].endswith(
            f"; {name!r} goes through PulseAudio (ALSA pcm type pulse), a sound server of a desktop user's "
            "session (a system service cannot reach it): name the sound card itself instead (`voxnode devices` "
            "lists its plughw:CARD=... names)"
        ), errors[name]
    assert errors["card"] == ""  # a chain without a server opens and says nothing


def test_in_a_users_session_it_asks_whether_the_server_runs(tmp_path):
    error = _child(tmp_path, "talk", session=True)["errors"]["talk"]
    assert "(is PulseAudio running for this user?)" in error and "system service" not in error, error


def test_a_missing_plugin_is_named_with_its_package_not_blamed_on_the_session(tmp_path):
    error = _child(tmp_path, "default")["errors"]["default"]
    assert "Cannot open shared library" in error, error
    assert error.endswith("; ALSA's plugin for pcm type pipewire is not installed (Debian: pipewire-alsa)"), error


# Listed PCMs only (each with a hint), without alsa.conf's thirty: `voxnode devices` probes each one.
DEVICES_CONF = """pcm.talk { type pulse hint.description "talk" }
pcm.gone { type pulse server "unix:/nonexistent/native" hint.description "gone" }
pcm.quiet { type null hint.description "quiet" }
"""


@pytest.mark.skipif(not have_pulseaudio(), reason="needs pulseaudio and pulseaudio-utils (make deps-test)")
def test_voxnode_devices_marks_what_goes_through_a_sound_server(voxnode_cmd, tmp_path):
    """The trap this closes: in a desktop terminal `voxnode devices` opened `default` (PipeWire's) and said
    "16 kHz ok", and the service configured with it could not open it. A real PulseAudio (its own socket
    and runtime folder) stands in for the desktop's sound server; `gone` names a server that is not there."""
    server = PulseServer(tmp_path / "pa")
    try:
        (tmp_path / "asound.conf").write_text(DEVICES_CONF)
        env = {**server.env, "ALSA_CONFIG_PATH": str(tmp_path / "asound.conf")}
        p = subprocess.run(voxnode_cmd + ["devices"], capture_output=True, text=True, timeout=60, env=env)
    finally:
        server.stop()
    lines = {line.split(":")[0]: line for line in p.stdout.splitlines()}
    assert set(lines) == {"talk", "gone", "quiet"}, p.stdout + p.stderr
    assert lines["talk"].endswith(
        "16 kHz ok; through PulseAudio, a desktop session's sound server that voxnode.service cannot reach"
    ), lines["talk"]
    assert lines["gone"].startswith("gone: cannot open: Connection refused [gone]"), lines["gone"]
    assert "(is PulseAudio running for this user?)" in lines["gone"], lines["gone"]  # a session: it has a runtime dir
    assert lines["quiet"].endswith("16 kHz ok"), lines["quiet"]
