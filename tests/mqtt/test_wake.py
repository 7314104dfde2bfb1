"""Wake words over MQTT: the real `voxnode run --file` with [wake] and [mqtt] on, a real Mosquitto.

The spoken words are espeak-ng's; the detector, gate, recogniser and publisher are the real ones."""

from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import pytest

from scripts.bench import audio_corpus as ac
from tests.mqtt.broker import retained
from tests.mqtt.conftest import write_config
from voxnode.audio.wavfile import write_wav

pytestmark = pytest.mark.skipif(not ac.have_espeak(), reason="needs espeak-ng and sox (make deps-test)")

BASE = "voxnode/testnode"


def test_wake_event_topic_final_carries_the_word_and_home_assistant_gets_an_event_entity(
    tmp_path, broker, monitor_for, voxnode_cmd, validate
):
    def say(text: str, speed: int = 160) -> np.ndarray:
        return ac.at_dbfs(ac.tts(text, "en-us", speed), -25)

    audio = np.concatenate(
        [
            ac.silence(0.5),
            say("what is the weather like"),
            ac.silence(1.2),
            say("okay nabu", 150),
            ac.silence(0.6),
            say("switch off the bedroom fan"),
            ac.silence(1.5),
        ]
    )
    wav = tmp_path / "wake.wav"
    write_wav(wav, audio.astype(np.int16))
    mon = monitor_for(broker)
    cfg = write_config(tmp_path / "c.toml", broker)
    cfg.write_text(cfg.read_text() + "\n[wake]\nenabled = true\n")
    p = subprocess.run(
        [*voxnode_cmd, "run", "--config", str(cfg), "--file", str(wav)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONMALLOC": "malloc"},
    )
    assert p.returncode == 0, p.stderr
    assert mon.wait_for(lambda: len(mon.on(f"{BASE}/mic/transcript")) >= 1), p.stderr
    (wake,) = [validate("wake", m) for m in mon.on(f"{BASE}/mic/wake")]
    assert wake["wake_word"] == "okay_nabu" and wake["stream"] == "mic"
    finals = [validate("transcript", m) for m in mon.on(f"{BASE}/mic/transcript")]
    assert len(finals) == 1 and finals[0]["wake_word"] == "okay_nabu", finals
    assert "fan" in finals[0]["text"].lower() and "weather" not in finals[0]["text"].lower()
    for partial in mon.on(f"{BASE}/mic/partial"):
        assert "weather" not in validate("partial", partial)["text"].lower()
    # One Home Assistant device per stream: the wake event entity sits on the stream's device.
    discovery = validate("discovery", mon.on("homeassistant/device/testnode/mic/config")[-1])
    entity = discovery["cmps"]["wake"]
    assert entity["p"] == "event" and entity["state_topic"] == f"{BASE}/mic/wake" and entity["event_types"] == ["wake"]
    assert entity["qos"] == 1
    assert "Traceback" not in p.stderr


def test_follow_up_switch_state_commands_and_refusals(tmp_path, broker, monitor_for, feeders, validate):
    """The real daemon (tests/mqtt/feeder.py) on a stream with a wake word: the follow-up switch is
    announced, its retained state follows the config at connect and then every command, and a
    stream without a wake word (or a bad payload) gets an error reply."""
    mon = monitor_for(broker)
    cfg = write_config(tmp_path / "c.toml", broker, health={"interval_s": 3600.0})
    cfg.write_text(cfg.read_text() + "\n[wake]\nenabled = true\nfollow_up_s = 4\n")
    f = feeders(cfg, count=0, interval=0.1, tag="follow-up")
    state = f"{BASE}/mic/follow_up/state"
    # The daemon connects once its engine has loaded: slow on a loaded machine.
    assert mon.wait_for(lambda: mon.on(state)[-1:] == [b"ON"], 90), f.log()  # follow_up_s > 0: on at start
    config_topic = "homeassistant/device/testnode/mic/config"
    assert mon.wait_for(lambda: mon.on(config_topic), 30), f.log()  # announced once its sync echo came back
    discovery = validate("discovery", mon.on(config_topic)[-1])
    switch = discovery["cmps"]["follow_up"]
    assert switch["p"] == "switch" and switch["command_topic"] == f"{BASE}/mic/follow_up/set"
    assert switch["state_topic"] == state and switch["optimistic"] is False
    assert "'follow_up': value_json.follow_up" in discovery["cmps"]["final"]["value_template"]

    mon.client.publish(f"{BASE}/mic/follow_up/set", b"OFF", qos=1)
    assert mon.wait_for(lambda: mon.on(state)[-1:] == [b"OFF"]), f.log()
    assert retained(broker, state) == b"OFF"
    mon.client.publish(f"{BASE}/cmd", json.dumps({"cmd": "follow_up_on", "stream": "mic"}), qos=1)
    assert mon.wait_for(lambda: mon.on(state)[-1:] == [b"ON"]), f.log()
    assert "stream mic: follow-up on" in f.log()

    mon.client.publish(f"{BASE}/mic/follow_up/set", b"maybe", qos=1)
    mon.client.publish(f"{BASE}/garage/follow_up/set", b"ON", qos=1)
    assert mon.wait_for(lambda: len(mon.on(f"{BASE}/error")) >= 2), f.log()
    errors = {e["received"]: e for e in (validate("error", p) for p in mon.on(f"{BASE}/error"))}
    assert errors["maybe"]["error"] == "bad_argument" and "ON or OFF" in errors["maybe"]["message"]
    assert errors["ON"]["error"] == "unknown_stream" and errors["ON"]["cmd"] == "follow_up_on"
    assert retained(broker, state) == b"ON"  # the refusals changed nothing
    assert f.stop() == 0 and "Traceback" not in f.log()
