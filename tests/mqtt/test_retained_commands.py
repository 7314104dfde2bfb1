"""Retained commands and the mute across restarts (issue 27, item 5), the real daemon (feeder
subprocess) against a real Mosquitto.

A command acts once, when it arrives. Any client may publish one with the retain flag; the broker
then hands it to the node again at every connect, so before this a retained `mute` muted the node
at every restart (and a retained `unmute` would unmute it). Now a retained copy is ignored and said
to be (the log, an `error` reply), and a mute the user set is kept by the node's own record."""

from __future__ import annotations

import json

import pytest

from tests.mqtt.broker import retained
from tests.mqtt.conftest import write_config

BASE = "voxnode/testnode"
CMD = f"{BASE}/cmd"
STATE = f"{BASE}/mic/mute/state"
MUTE = json.dumps({"cmd": "mute", "stream": "mic"})
UNMUTE = json.dumps({"cmd": "unmute", "stream": "mic"})


def muted_now(mon, f) -> bool:
    """Ask for a health report (a live command, behind whatever is queued) and read `muted` from it."""
    n = len(mon.on(f"{BASE}/health"))
    mon.client.publish(CMD, json.dumps({"cmd": "health"}), qos=1)
    assert mon.wait_for(lambda: len(mon.on(f"{BASE}/health")) > n, 30), f.log()
    return json.loads(mon.on(f"{BASE}/health")[-1])["streams"]["mic"]["muted"]


@pytest.mark.parametrize("protocol", ["5", "3.1.1"])  # both clear the flag on live delivery, set it on replay
def test_retained_commands_are_ignored_and_a_mute_survives_restarts(
    tmp_path, broker, monitor_for, feeders, validate, protocol
):
    mon = monitor_for(broker)  # "any client on the network": it also publishes the commands
    cfg = write_config(tmp_path / "c.toml", broker, health={"interval_s": 3600.0}, protocol=protocol)

    # 1. Someone publishes `mute` with the retain flag while the node runs: a live command, it acts once.
    f = feeders(cfg, count=1, interval=0.1, tag="r1")
    assert mon.wait_for(lambda: mon.on(STATE)[-1:] == [b"OFF"], 30), f.log()
    mon.client.publish(CMD, MUTE, qos=1, retain=True)
    assert mon.wait_for(lambda: mon.on(STATE)[-1:] == [b"ON"]), f.log()
    mon.client.publish(CMD, UNMUTE, qos=1)  # the user unmutes (not retained)
    assert mon.wait_for(lambda: mon.on(STATE)[-1:] == [b"OFF"]), f.log()
    assert f.stop() == 0
    assert retained(broker, CMD) == MUTE.encode()  # still on the broker: the node does not delete it

    # 2. Restart with the retained mute still there. Before: "MQTT command: mute", muted again.
    errors_before = len(mon.on(f"{BASE}/error"))
    f = feeders(cfg, count=1, interval=0.1, tag="r2")
    assert mon.wait_for(lambda: len(mon.on(f"{BASE}/error")) > errors_before, 30), f.log()
    reply = validate("error", mon.on(f"{BASE}/error")[-1])
    assert reply["error"] == "retained" and CMD in reply["message"] and reply["received"] == MUTE
    assert muted_now(mon, f) is False
    assert retained(broker, STATE) == b"OFF"
    log = f.log()
    assert f"ignored a retained command on {CMD}" in log, log
    assert "MQTT command: mute" not in log
    assert log.count("ignored a retained command") == 1  # one line, not one per tick or reconnect

    # 3. The user mutes the stream; then retained unmutes are left on both command topics.
    mon.client.publish(CMD, MUTE, qos=1)
    assert mon.wait_for(lambda: mon.on(STATE)[-1:] == [b"ON"]), f.log()
    assert f.stop() == 0
    mon.client.publish(CMD, UNMUTE, qos=1, retain=True)
    mon.client.publish(f"{BASE}/mic/mute/set", b"OFF", qos=1, retain=True)

    # 4. Restart: still muted, from the node's own record; neither retained unmute had any effect.
    errors_before = len(mon.on(f"{BASE}/error"))
    f = feeders(cfg, count=1, interval=0.1, tag="r3")
    assert mon.wait_for(lambda: len(mon.on(f"{BASE}/error")) >= errors_before + 2, 30), f.log()
    assert {json.loads(p)["error"] for p in mon.on(f"{BASE}/error")[errors_before:]} == {"retained"}
    assert muted_now(mon, f) is True
    assert mon.wait_for(lambda: retained(broker, STATE) == b"ON")
    log = f.log()
    assert "stream mic stays muted" in log and "MQTT command: unmute" not in log, log

    # 5. A live unmute still works, and is what the next start finds.
    mon.client.publish(CMD, UNMUTE, qos=1)
    assert mon.wait_for(lambda: mon.on(STATE)[-1:] == [b"OFF"]), f.log()
    assert f.stop() == 0
    errors_before = len(mon.on(f"{BASE}/error"))
    f = feeders(cfg, count=1, interval=0.1, tag="r4")
    assert mon.wait_for(lambda: len(mon.on(f"{BASE}/error")) >= errors_before + 2, 30), f.log()
    assert muted_now(mon, f) is False
    assert f.stop() == 0
    for tag in ("r1", "r2", "r3", "r4"):
        assert "Traceback" not in (tmp_path / f"feeder-{tag}.log").read_text()
