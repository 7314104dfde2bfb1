"""The `playing` input over MQTT (issue 24): the real daemon (tests/mqtt/feeder.py), a real Mosquitto.

ON/OFF on `{stream}/playing` and the `playing_on`/`playing_off` commands set it; its state is
retained on `{stream}/playing/state` and shown in health; Home Assistant gets a "Playing" switch;
a retained copy is ignored (issue 27: a command acts once, when it arrives, never at a reconnect).
"""

from __future__ import annotations

import json

from tests.mqtt.broker import retained
from tests.mqtt.conftest import write_config

BASE = "voxnode/testnode"


def test_playing_input_state_health_switch_and_refusals(tmp_path, broker, monitor_for, feeders, validate):
    mon = monitor_for(broker)
    cfg = write_config(tmp_path / "c.toml", broker, health={"interval_s": 1.0})
    f = feeders(cfg, count=0, interval=0.1, tag="playing")
    state, playing = f"{BASE}/mic/playing/state", f"{BASE}/mic/playing"
    # The daemon connects once its engine has loaded: slow on a loaded machine.
    assert mon.wait_for(lambda: mon.on(state)[-1:] == [b"OFF"], 90), f.log()  # off at start
    config_topic = "homeassistant/device/testnode/mic/config"
    assert mon.wait_for(lambda: mon.on(config_topic), 30), f.log()
    switch = validate("discovery", mon.on(config_topic)[-1])["cmps"]["playing"]
    assert switch["p"] == "switch" and switch["command_topic"] == playing and switch["state_topic"] == state

    def health_playing() -> bool | None:
        reports = mon.on(f"{BASE}/health")
        return json.loads(reports[-1])["streams"]["mic"].get("playing_input") if reports else None

    mon.client.publish(playing, b"ON", qos=1)
    assert mon.wait_for(lambda: mon.on(state)[-1:] == [b"ON"]), f.log()
    assert retained(broker, state) == b"ON"
    assert mon.wait_for(lambda: health_playing() is True), f.log()
    assert "stream mic: the node is playing" in f.log()
    mon.client.publish(f"{BASE}/cmd", json.dumps({"cmd": "playing_off", "stream": "mic"}), qos=1)
    assert mon.wait_for(lambda: mon.on(state)[-1:] == [b"OFF"]), f.log()
    assert mon.wait_for(lambda: health_playing() is False), f.log()

    mon.client.publish(playing, b"loud", qos=1)
    mon.client.publish(f"{BASE}/garage/playing", b"ON", qos=1)
    assert mon.wait_for(lambda: len(mon.on(f"{BASE}/error")) >= 2), f.log()
    errors = [validate("error", p) for p in mon.on(f"{BASE}/error")]
    assert {e["error"] for e in errors} == {"bad_argument", "unknown_stream"}, errors
    assert retained(broker, state) == b"OFF" and health_playing() is False  # the refusals changed nothing

    # Left retained, an ON acts once, when it arrives; a restart does not act on it again.
    mon.client.publish(playing, b"ON", qos=1, retain=True)
    assert mon.wait_for(lambda: mon.on(state)[-1:] == [b"ON"]), f.log()
    assert f.stop() == 0 and "Traceback" not in f.log()
    f = feeders(cfg, count=0, interval=0.1, tag="playing-again")
    assert mon.wait_for(lambda: any(validate("error", p)["error"] == "retained" for p in mon.on(f"{BASE}/error")), 90)
    assert mon.wait_for(lambda: retained(broker, state) == b"OFF"), f.log()  # not playing after the restart
    assert f"ignored a retained command on {playing}" in f.log()
    mon.client.publish(playing, b"", qos=1, retain=True)  # cleared
    assert f.stop() == 0 and "Traceback" not in f.log()
