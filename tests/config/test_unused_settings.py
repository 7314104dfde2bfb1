"""Settings written where they can never take effect (config/unused.py). Before (stop 46, audit3): every
one of these passed check-config, `run` and a reload without a word."""

import logging
import subprocess

import pytest

from voxnode.config import parse_config, render_reference
from voxnode.errors import ConfigError
from voxnode.reload import config_loader

pytestmark = pytest.mark.unit  # make check: needs only the venv (pyproject.toml markers)

STREAMS = '[[streams]]\nname = "kitchen"\ndevice = "hw:1"\n[[streams]]\nname = "hall"\ndevice = "hw:2"\n'


@pytest.mark.parametrize(
    "key, value",
    [("device", '"hw:9"'), ("channel", "1"), ("channels", "2"), ("area", '"Hall"'), ("echo_reference", '"loop"')],
)
def test_the_single_streams_audio_keys_beside_streams_are_refused(key, value):
    with pytest.raises(ConfigError) as e:
        parse_config(f"[audio]\n{key} = {value}\n" + STREAMS, "c.toml")
    assert str(e.value) == (
        f"c.toml: audio.{key} = {value}: not used with [[streams]] (2 configured): each stream has its own {key}, "
        "and the single [audio] stream is not run; set it in the [[streams]] tables, or remove it from [audio]"
    )


def test_the_audio_keys_every_stream_inherits_still_apply_and_the_reference_file_still_loads():
    inherited = '[audio]\nbuffer_periods = 8\nring_seconds = 4.0\nretry_max_s = 5.0\nresample = "off"\n'
    c = parse_config(inherited + STREAMS)
    assert (c.audio.buffer_periods, c.audio.ring_seconds, c.audio.retry_max_s, c.audio.resample) == (8, 4.0, 5.0, "off")
    # The reference file copied whole writes [audio] device = "default" etc.: streams added to it load.
    assert [s.name for s in parse_config(render_reference() + STREAMS).effective_streams()] == ["kitchen", "hall"]
    # "" (no microphone: a Wyoming server) says what [[streams]] mean too.
    assert len(parse_config('[audio]\ndevice = ""\n' + STREAMS).effective_streams()) == 2


def test_an_echo_reference_shared_by_streams_is_not_another_microphone():
    loop = 'echo_reference = "hw:Loopback,1"\n'
    text = STREAMS.replace('device = "hw:1"\n', 'device = "hw:1"\n' + loop).replace(
        'device = "hw:2"\n', 'device = "hw:2"\n' + loop
    )
    assert [s.echo_reference for s in parse_config(text).streams] == ["hw:Loopback,1"] * 2
    with pytest.raises(ConfigError) as e:
        parse_config(STREAMS + 'echo_reference = "hw:1"\n', "c.toml")
    assert str(e.value).startswith(
        'c.toml: streams[1].echo_reference = "hw:1": is the microphone of streams[0] ("kitchen")'
    )


FOLLOW_UP_UNUSED = {
    "wake off": ("[wake]\nfollow_up_s = 5\n", "wake.enabled = false, and no [[streams]] table sets wake"),
    "every stream off": (
        '[wake]\nenabled = true\nfollow_up_s = 5\n[[streams]]\nname = "k"\ndevice = "hw:1"\nwake = "off"\n',
        'every stream has wake = "off"',
    ),
    "no microphone": (
        '[audio]\ndevice = ""\n[wyoming]\nenabled = true\n[wake]\nfollow_up_s = 5\n',
        "there is no microphone",
    ),
}


@pytest.mark.parametrize("case", list(FOLLOW_UP_UNUSED))
def test_follow_up_without_a_wake_word_is_warned_about(case):
    text, why = FOLLOW_UP_UNUSED[case]
    (line,) = parse_config(text, "c.toml").warnings()  # stop 47: one line for every [wake] key (config/dependent.py)
    opening, _, _ = line.partition(": not used: ")
    assert opening.startswith("c.toml: ") and "wake.follow_up_s = 5.0" in opening[8:].split(", "), line
    assert f"no stream listens for a wake word ({why})" in line, line


def test_follow_up_with_a_wake_word_is_not_warned_about():
    assert parse_config("[wake]\nenabled = true\nfollow_up_s = 5\n").warnings() == []
    one = '[wake]\nfollow_up_s = 5\n[[streams]]\nname = "k"\ndevice = "hw:1"\nwake = "alexa"\n'
    assert parse_config(one).warnings() == []
    assert parse_config("[wake]\nfollow_up_s = 0\n").warnings() == []


def test_check_config_run_and_a_reload_all_say_the_warning(tmp_path, voxnode_cmd, caplog):
    f = tmp_path / "c.toml"
    f.write_text('[wake]\nfollow_up_s = 5\n[[streams]]\nname = "k"\ndevice = "hw:1"\n')
    said = f"{f}: wake.follow_up_s = 5.0: not used: no stream listens for a wake word"
    p = subprocess.run(voxnode_cmd + ["check-config", "--config", str(f)], capture_output=True, text=True, timeout=60)
    lines = p.stderr.splitlines()
    assert p.returncode == 0 and len(lines) == 2 and lines[1] == f"# config OK: {f}", p.stderr
    assert lines[0].startswith(f"voxnode: warning: {said}"), p.stderr
    # run logs it at start (here it then stops on --device, which [[streams]] refuse, before any model loads)
    p = subprocess.run(
        voxnode_cmd + ["run", "--config", str(f), "--device", "hw:3"], capture_output=True, text=True, timeout=60
    )
    lines = p.stderr.splitlines()
    assert p.returncode == 1 and len(lines) == 2 and f"WARNING voxnode: {said}" in lines[0], p.stderr
    assert lines[1].startswith("voxnode: error: --device 'hw:3' cannot be used with [[streams]]"), p.stderr
    # and a reload (SIGHUP and the MQTT reload command re-read the file through this loader)
    caplog.set_level(logging.WARNING)
    assert config_loader(str(f))().wake.follow_up_s == 5.0
    assert [r.getMessage()[: len(said)] for r in caplog.records] == [said]
