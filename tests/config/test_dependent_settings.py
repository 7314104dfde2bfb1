"""Settings whose effect depends on another key, written while that key is off (config/dependent.py): one
warning line each, naming the keys, the key that makes them do nothing, and what to do. Before (stop 47)
every case below loaded without a word (only wake.follow_up_s was warned about, since stop 46)."""

import dataclasses
import logging
import subprocess

import pytest

from voxnode.config import Config, parse_config, render_reference
from voxnode.config.dependent import DEPENDENCIES, OFF_VALUES
from voxnode.reload import config_loader

pytestmark = pytest.mark.unit  # make check: needs only the venv (pyproject.toml markers)

STREAM = '[[streams]]\nname = "k"\ndevice = "hw:1"\n'
NO_MIC = '[audio]\ndevice = ""\n[wyoming]\nenabled = true\n'

# name -> (config with the governing key off, the keys its one line opens with, the cause it names,
#          the same keys with the governing key on: no warning)
CASES = {
    "[wake] without a wake word": (
        '[wake]\nthreshold = 0.9\nlisten_timeout_ms = 3000\nrefractory_ms = 500\nconfirm = "openwakeword"\n'
        "skip_silence = false\n",
        'wake.threshold = 0.9, wake.listen_timeout_ms = 3000, wake.refractory_ms = 500, wake.confirm = "openwakeword", '
        "wake.skip_silence = false",
        "no stream listens for a wake word (wake.enabled = false, and no [[streams]] table sets wake)",
        '[wake]\nthreshold = 0.9\nlisten_timeout_ms = 3000\nrefractory_ms = 500\nconfirm = "openwakeword"\n'
        'skip_silence = false\n[[streams]]\nname = "k"\ndevice = "hw:1"\nwake = "alexa"\n',  # a stream's own
    ),
    "[wake] with every stream off": (
        "[wake]\nenabled = true\nthreshold = 0.9\n" + STREAM + 'wake = "off"\n',
        "wake.enabled = true, wake.threshold = 0.9",
        'no stream listens for a wake word (every stream has wake = "off")',
        "[wake]\nenabled = true\nthreshold = 0.9\n" + STREAM,
    ),
    "wake.enabled with every stream's own wake": (
        "[wake]\nenabled = true\n" + STREAM + 'wake = "alexa"\n',
        "wake.enabled = true",
        "every [[streams]] table sets wake itself",
        "[wake]\nenabled = true\n" + STREAM + 'wake = "alexa"\n[[streams]]\nname = "h"\ndevice = "hw:2"\n',
    ),
    "wake.model with every stream's own model": (
        '[wake]\nmodel = "alexa"\n' + STREAM + 'wake = "hey_jarvis"\n',
        'wake.model = "alexa"',
        "every stream with a wake word names its own models",
        '[wake]\nmodel = "alexa"\n' + STREAM + 'wake = "on"\n',
    ),
    "asr.model with asr.model_dir": (
        '[asr]\nmodel = "base"\nmodel_dir = "/opt/voxnode/my-whisper"\n',
        'asr.model = "base"',
        'asr.model_dir = "/opt/voxnode/my-whisper" is set (the model is the one in that folder)',
        '[asr]\nmodel = "base"\n',
    ),
    "frontend.echo_cancel without an echo reference": (
        '[frontend]\necho_cancel = "webrtc"\n',
        'frontend.echo_cancel = "webrtc"',
        "no stream has an echo_reference",
        '[frontend]\necho_cancel = "webrtc"\n' + STREAM + 'echo_reference = "hw:Loopback,1"\n',
    ),
    "frontend.denoise_* with denoise off": (
        '[frontend]\ndenoise_engine = "webrtc"\ndenoise_floor_db = -6.0\n',
        'frontend.denoise_engine = "webrtc", frontend.denoise_floor_db = -6.0',
        'frontend.denoise = "off"',
        '[frontend]\ndenoise = "asr"\ndenoise_engine = "webrtc"\ndenoise_floor_db = -6.0\n',
    ),
    "the spectral VAD's keys with silero": (
        "[vad]\nthreshold = 2.0\nmin_level_dbfs = -50.0\n",
        "vad.threshold = 2.0, vad.min_level_dbfs = -50.0",
        'vad.engine = "silero" (only "spectral" and "both" read them)',
        '[vad]\nengine = "both"\nthreshold = 2.0\nmin_level_dbfs = -50.0\n',
    ),
    "vad.aggressiveness with the spectral VAD": (
        '[vad]\nengine = "spectral"\naggressiveness = 1\n',
        "vad.aggressiveness = 1",
        'vad.engine = "spectral" (only "webrtc" and "both" read it)',
        '[vad]\nengine = "webrtc"\naggressiveness = 1\n',
    ),
    "vad.silero_threshold with WebRTC's VAD": (
        '[vad]\nengine = "webrtc"\nsilero_threshold = 0.7\n',
        "vad.silero_threshold = 0.7",
        'vad.engine = "webrtc"',
        "[vad]\nsilero_threshold = 0.7\n",
    ),
    "vad.floor_* without the noise gate": (
        "[vad]\nnoise_gate = false\nfloor_margin_db = 4.0\nfloor_window_ms = 5000\n",
        "vad.floor_margin_db = 4.0, vad.floor_window_ms = 5000",
        "vad.noise_gate = false",
        "[vad]\nfloor_margin_db = 4.0\nfloor_window_ms = 5000\n",
    ),
    "the end-of-turn keys with end_of_turn off": (
        '[vad]\nend_of_turn = "off"\nagreed_end_hangover_ms = 120\nend_of_turn_min_prob = 0.7\n',
        "vad.agreed_end_hangover_ms = 120, vad.end_of_turn_min_prob = 0.7",
        'vad.end_of_turn = "off"',
        "[vad]\nagreed_end_hangover_ms = 120\nend_of_turn_min_prob = 0.7\n",
    ),
    "vad.agreed_end_min_prob with agreed_end_hangover_ms 0": (
        "[vad]\nagreed_end_hangover_ms = 0\nagreed_end_min_prob = 0.7\n",
        "vad.agreed_end_min_prob = 0.7",
        "vad.agreed_end_hangover_ms = 0",
        "[vad]\nagreed_end_hangover_ms = 100\nagreed_end_min_prob = 0.7\n",
    ),
    "stream.partial_* without partials": (
        "[stream]\npartials = false\npartial_interval_ms = 300\npartial_max_wait_ms = 500\n",
        "stream.partial_interval_ms = 300, stream.partial_max_wait_ms = 500",
        "stream.partials = false",
        "[stream]\npartial_interval_ms = 300\npartial_max_wait_ms = 500\n",
    ),
    "asr.draft_margin without drafts": (
        "[asr]\ndraft = false\ndraft_margin = 0.0\n",
        "asr.draft_margin = 0.0",
        "asr.draft = false",
        "[asr]\ndraft_margin = 0.0\n",
    ),
    "asr.draft_margin with greedy finals": (
        "[asr]\nbeam_size = 1\ndraft_margin = 0.0\n",
        "asr.draft_margin = 0.0",
        "asr.beam_size = 1",
        "[asr]\nbeam_size = 2\ndraft_margin = 0.0\n",
    ),
    "asr.hotword_boost without hotwords": (
        "[asr]\nhotword_boost = 4.0\n",
        "asr.hotword_boost = 4.0",
        "no hotwords are set",
        '[asr]\nhotword_boost = 4.0\n[[streams]]\nname = "k"\ndevice = "hw:1"\nhotwords = ["Kitchen"]\n',
    ),
    "[webhook] without a url": (
        "[webhook]\ntimeout_s = 3.0\nretry_max_s = 10.0\n",
        "webhook.timeout_s = 3.0, webhook.retry_max_s = 10.0",
        'webhook.url = ""',
        '[webhook]\nurl = "http://ha.local:8123/hook"\ntimeout_s = 3.0\nretry_max_s = 10.0\n',
    ),
    "[wyoming] off": (
        "[wyoming]\nport = 10400\nzeroconf = true\n",
        "wyoming.port = 10400, wyoming.zeroconf = true",
        "wyoming.enabled = false",
        "[wyoming]\nenabled = true\nport = 10400\nzeroconf = true\n",
    ),
    "[mqtt] off": (
        '[mqtt]\nhost = "broker.lan"\nusername = "edge"\npassword = "s3cret"\nnode_id = "n1"\n',
        'mqtt.host = "broker.lan", mqtt.username = "edge", mqtt.password',  # never the password; node_id is used
        "mqtt.enabled = false",
        '[mqtt]\nenabled = true\nhost = "broker.lan"\nusername = "edge"\npassword = "s3cret"\nnode_id = "n1"\n',
    ),
    "health.prometheus_* without Prometheus": (
        "[health]\nprometheus_port = 9500\n",
        "health.prometheus_port = 9500",
        "health.prometheus = false",
        "[health]\nprometheus = true\nprometheus_port = 9500\n",
    ),
    "[adapt] without a microphone": (
        NO_MIC + "[adapt]\nkeep_finals = true\n",
        "adapt.keep_finals = true",
        "there is no microphone",
        NO_MIC.replace('""', '"hw:1"') + "[adapt]\nkeep_finals = true\n",
    ),
    "adapt.noise_max_mb without keep_noise": (
        "[adapt]\nkeep_finals = true\nnoise_max_mb = 10.0\n",
        "adapt.noise_max_mb = 10.0",
        "adapt.keep_noise = false",
        "[adapt]\nkeep_noise = true\nnoise_max_mb = 10.0\n",
    ),
    "adapt.dir without keeping anything": (
        '[adapt]\ndir = "/srv/adapt"\n',
        'adapt.dir = "/srv/adapt"',
        "adapt.keep_noise and keep_finals are false",
        '[adapt]\nkeep_finals = true\ndir = "/srv/adapt"\n',
    ),
    "[audio] without a microphone": (
        '[audio]\ndevice = ""\nring_seconds = 5.0\n[wyoming]\nenabled = true\n',
        "audio.ring_seconds = 5.0",
        "there is no microphone",
        '[audio]\ndevice = "hw:1"\nring_seconds = 5.0\n[wyoming]\nenabled = true\n',
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_dependent_key_with_its_governing_key_off_is_warned_about_once(case):
    off, keys, cause, on = CASES[case]
    lines = parse_config(off, "c.toml").warnings()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"c.toml: {keys}: not used: "), lines[0]
    assert cause in lines[0] and "\n" not in lines[0], lines[0]
    assert parse_config(on, "c.toml").warnings() == []


def test_a_secret_is_named_never_shown():
    text = '[mqtt]\nusername = "edge"\npassword = "s3cret"\n[webhook]\nheaders = ["Authorization: Bearer tok3n"]\n'
    said = "\n".join(parse_config(text).warnings())
    assert "s3cret" not in said and 'mqtt.username = "edge", mqtt.password: not used' in said, said
    assert "tok3n" not in said and "webhook.headers: not used" in said, said


def test_defaults_and_the_reference_file_say_nothing():
    assert Config().warnings() == []
    assert parse_config(render_reference()).warnings() == []  # every key written, at its default
    # A dependent key written at its default, or at a value that is off itself, beside its governing key off
    defaults = '[vad]\nend_of_turn = "off"\nend_of_turn_min_prob = 0.9\nagreed_end_hangover_ms = 0\n'
    defaults += '[mqtt]\nhost = "localhost"\n'
    assert parse_config(defaults + '[frontend]\necho_cancel = "off"\n').warnings() == []


def test_a_key_idle_for_two_reasons_gets_one_line():
    text = '[vad]\nend_of_turn = "off"\nagreed_end_hangover_ms = 0\nagreed_end_min_prob = 0.7\n'
    assert parse_config(text, "c.toml").warnings() == [
        'c.toml: vad.agreed_end_min_prob = 0.7: not used: vad.end_of_turn = "off"; set vad.end_of_turn = '
        '"smart-turn", or remove it'
    ]


def test_every_key_of_the_table_is_a_key_of_the_config():
    hints = {f.name: f.default_factory() for f in dataclasses.fields(Config) if f.metadata.get("section")}
    for key in [k for row in DEPENDENCIES for k in row.keys] + list(OFF_VALUES):
        section, name = key.split(".")
        assert name in {f.name for f in dataclasses.fields(hints[section])}, key


def test_run_with_device_warns_about_the_config_that_runs(tmp_path, caplog):
    """`voxnode run --device` gives a file without a microphone one (and a reload re-reads it so): before
    (stop 47) its warnings said "there is no microphone"."""
    f = tmp_path / "c.toml"
    f.write_text(NO_MIC + "[wake]\nfollow_up_s = 5\n")
    caplog.set_level(logging.WARNING)
    assert config_loader(str(f), "hw:3")().audio.device == "hw:3"
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and said[0].startswith(f"{f}: wake.follow_up_s = 5.0: not used: "), said
    assert "(wake.enabled = false, and no [[streams]] table sets wake)" in said[0], said


def test_check_config_prints_each_warning_and_still_passes(tmp_path, voxnode_cmd):
    f = tmp_path / "c.toml"
    f.write_text('[vad]\nend_of_turn = "off"\nend_of_turn_min_prob = 0.5\n[mqtt]\nhost = "b"\nkeepalive = 60\n')
    p = subprocess.run(voxnode_cmd + ["check-config", "--config", str(f)], capture_output=True, text=True, timeout=60)
    lines = p.stderr.splitlines()
    assert p.returncode == 0 and len(lines) == 3 and lines[2] == f"# config OK: {f}", p.stderr
    assert lines[0].startswith(f"voxnode: warning: {f}: vad.end_of_turn_min_prob = 0.5: not used: "), p.stderr
    assert lines[1].startswith(f'voxnode: warning: {f}: mqtt.host = "b", mqtt.keepalive = 60: not used: ')
