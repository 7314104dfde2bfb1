"""Status, last will, discovery, health, partials, transcripts and commands against a real Mosquitto,
published by the real daemon (feeder subprocess); every payload is checked against docs/schemas."""

from __future__ import annotations

import json
import signal
import time

from tests.mqtt.broker import retained
from tests.mqtt.conftest import assert_all_finals_arrived, state_of, states, write_config

BASE = "voxnode/testnode"


def test_every_payload_type_matches_its_schema(tmp_path, broker, monitor_for, feeders, validate):
    mon = monitor_for(broker)
    cfg = write_config(tmp_path / "c.toml", broker)
    f = feeders(cfg, count=5, interval=0.1, tag="schema", partials=True)
    f.wait_accepted(5)
    assert mon.wait_for(lambda: len(mon.on(f"{BASE}/mic/transcript")) >= 5), f.log()
    assert mon.wait_for(lambda: mon.on(f"{BASE}/health"))
    mon.client.publish(f"{BASE}/cmd", json.dumps({"cmd": "memory", "id": "m1"}), qos=1)
    mon.client.publish(f"{BASE}/cmd", b"{not json", qos=1)
    assert mon.wait_for(lambda: mon.on(f"{BASE}/debug/memory") and mon.on(f"{BASE}/error"), 15), f.log()

    for p in mon.on(f"{BASE}/mic/transcript"):
        ev = validate("transcript", p)
        assert ev["model"] and ev["type"] == "final"
    partials = mon.on(f"{BASE}/mic/partial")
    assert partials, "no partial arrived"
    for p in partials:
        validate("partial", p)
    for p in mon.on(f"{BASE}/health"):
        h = validate("health", p)
    assert h["memory"]["allocator"] == "malloc"  # the feeder runs under PYTHONMALLOC=malloc
    assert h["memory"]["heap"]["source"] == "mallinfo2"
    assert h["streams"]["mic"]["muted"] is False
    assert h["mqtt"]["connected"] is True
    assert set(h["delivery"]["pending"]) == {"mqtt"} and h["delivery"]["spool_writable"] is True  # the spool MQTT reads
    mon.client.publish(f"{BASE}/cmd", json.dumps({"cmd": "health"}), qos=1)
    assert mon.wait_for(lambda: "latency_p95_ms" in json.loads(mon.on(f"{BASE}/health")[-1])["streams"]["mic"])
    h = validate("health", mon.on(f"{BASE}/health")[-1])
    assert h["streams"]["mic"]["latency_p95_ms"] == 200.0  # the feeder's finals all say 200 ms
    validate("memory", mon.on(f"{BASE}/debug/memory")[0])
    validate("error", mon.on(f"{BASE}/error")[0])
    discovery = [m for m in mon.matching("/config") if m[0].startswith("homeassistant/device/testnode/")]
    assert {t for t, _, _ in discovery} == {
        "homeassistant/device/testnode/config",
        "homeassistant/device/testnode/mic/config",
    }
    for _, p, _ in discovery:
        validate("discovery", p)
    for p in mon.on(f"{BASE}/status"):
        validate("status", p)
    assert f.stop() == 0
    assert mon.wait_for(lambda: states(mon.on(f"{BASE}/status"))[-1:] == ["offline"])
    assert_all_finals_arrived(mon, f.accepted, f"{BASE}/mic/transcript")
    assert "Traceback" not in f.log()


def test_status_retained_online_and_last_will_offline(tmp_path, broker, feeders, validate):
    cfg = write_config(tmp_path / "c.toml", broker)
    f = feeders(cfg, count=1, interval=0.1, tag="lwt")
    f.wait_accepted(1)
    assert _wait_retained(broker, f"{BASE}/status", "online")
    # Health is retained too. It is published after status goes online (on a loaded machine, seconds
    # after): wait for the retained message itself.
    health = _poll_retained(broker, f"{BASE}/health", lambda p: True)
    assert health is not None, f"no retained health; log:\n{f.log()}"
    assert validate("health", health)["node"] == "testnode"
    f.stop(signal.SIGKILL)  # no DISCONNECT: the broker publishes the will
    assert _wait_retained(broker, f"{BASE}/status", "offline")
    will = json.loads(retained(broker, f"{BASE}/status"))
    assert will["node"] == "testnode" and will["config_sha256"]  # the will says what the node ran
    f2 = feeders(cfg, count=1, interval=0.1, tag="lwt2")
    f2.wait_accepted(1)
    assert _wait_retained(broker, f"{BASE}/status", "online")
    assert f2.stop() == 0  # clean stop says offline itself
    assert state_of(retained(broker, f"{BASE}/status")) == "offline"


def _poll_retained(broker, topic, accept, timeout=10.0) -> bytes | None:
    """The retained message on `topic` once one is there that `accept` takes, or None after `timeout`."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        payload = retained(broker, topic, timeout=1.0)
        if payload is not None and accept(payload):
            return payload
        time.sleep(0.1)
    return None


def _wait_retained(broker, topic, want, timeout=10.0) -> bool:
    return _poll_retained(broker, topic, lambda p: state_of(p) == want, timeout) is not None


def test_online_is_republished_after_a_broker_restart(tmp_path, broker, monitor_for, feeders):
    # A broker restart fires the will (test-recipes 2): the daemon must say online again.
    cfg = write_config(tmp_path / "c.toml", broker)
    f = feeders(cfg, count=1, interval=0.1, tag="re")
    f.wait_accepted(1)
    assert _wait_retained(broker, f"{BASE}/status", "online")
    broker.stop(signal.SIGTERM)
    broker.start()
    assert _wait_retained(broker, f"{BASE}/status", "online", timeout=15), f.log()
    f.stop()


def test_discovery_announces_node_and_stream_devices_and_reannounces_when_ha_comes_online(
    tmp_path, broker, monitor_for, feeders, validate
):
    mon = monitor_for(broker)
    cfg = write_config(tmp_path / "c.toml", broker, stream="kitchen", stream_area="Kitchen")
    f = feeders(cfg, count=1, interval=0.1, tag="disc")
    node_topic, stream_topic = "homeassistant/device/testnode/config", "homeassistant/device/testnode/kitchen/config"
    assert mon.wait_for(lambda: mon.on(node_topic) and mon.on(stream_topic)), f.log()
    node, stream = validate("discovery", mon.on(node_topic)[-1]), validate("discovery", mon.on(stream_topic)[-1])
    assert retained(broker, node_topic) is not None and retained(broker, stream_topic) is not None
    assert node["o"]["name"] == "voxnode" and node["avty_t"] == f"{BASE}/status" == stream["avty_t"]
    assert node["dev"]["ids"] == ["voxnode_testnode"]
    assert stream["dev"]["via_device"] == "voxnode_testnode" and stream["dev"]["sa"] == "Kitchen"
    assert "qos" not in node and "qos" not in stream  # a device-level qos is ignored by HA < mid-2026
    for d in (node, stream):
        for key, c in d["cmps"].items():
            assert c["qos"] == 1, key
    cmps = stream["cmps"]
    assert cmps["transcript"]["state_topic"] == f"{BASE}/kitchen/transcript"
    assert cmps["final"]["p"] == "event" and cmps["final"]["event_types"] == ["final"]
    assert cmps["partial"]["enabled_by_default"] is False
    sw = cmps["mute"]
    assert sw["p"] == "switch" and sw["command_topic"] == f"{BASE}/kitchen/mute/set"
    assert sw["state_topic"] == f"{BASE}/kitchen/mute/state"
    assert (sw["payload_on"], sw["payload_off"], sw["state_on"], sw["state_off"]) == ("ON", "OFF", "ON", "OFF")
    assert cmps["capture"]["device_class"] == "problem"
    assert cmps["xruns"]["state_class"] == cmps["dropped_frames"]["state_class"] == "total_increasing"
    for name in ("rss", "cpu", "backlog", "finals_refused", "leak", "spool_backlog"):
        assert node["cmps"][name]["state_topic"] == f"{BASE}/health"
    assert json.loads(node["cmps"]["reload"]["payload_press"]) == {"cmd": "reload"}
    assert json.loads(node["cmps"]["publish_health"]["payload_press"]) == {"cmd": "health"}
    uids = [c["unique_id"] for d in (node, stream) for c in d["cmps"].values()]
    assert len(set(uids)) == len(uids)
    n = len(mon.on(node_topic))
    mon.client.publish("homeassistant/status", "online", qos=1)
    assert mon.wait_for(lambda: len(mon.on(node_topic)) > n), "no re-announcement after homeassistant/status online"
    f.stop()


def test_commands_mute_health_and_refusals(tmp_path, broker, monitor_for, feeders, validate):
    mon = monitor_for(broker)
    cfg = write_config(tmp_path / "c.toml", broker, health={"interval_s": 3600.0}, max_command_bytes=256)
    f = feeders(cfg, count=1, interval=0.1, tag="cmd")
    assert mon.wait_for(lambda: mon.on(f"{BASE}/health")), f.log()

    def last_health():
        return json.loads(mon.on(f"{BASE}/health")[-1])

    def send(payload):
        mon.client.publish(f"{BASE}/cmd", payload, qos=1)

    state = f"{BASE}/mic/mute/state"
    assert mon.wait_for(lambda: mon.on(state)[-1:] == [b"OFF"]), "no retained mute state on connect"
    n = len(mon.on(f"{BASE}/health"))
    send(json.dumps({"cmd": "mute", "stream": "mic"}))
    assert mon.wait_for(lambda: len(mon.on(f"{BASE}/health")) > n and last_health()["streams"]["mic"]["muted"])
    assert mon.wait_for(lambda: mon.on(state)[-1:] == [b"ON"]) and retained(broker, state) == b"ON"
    n = len(mon.on(f"{BASE}/health"))
    send(json.dumps({"cmd": "health"}))  # on demand, while the interval is an hour
    assert mon.wait_for(lambda: len(mon.on(f"{BASE}/health")) > n)
    send(json.dumps({"cmd": "unmute", "stream": "mic"}))
    assert mon.wait_for(lambda: last_health()["streams"]["mic"]["muted"] is False)
    assert mon.wait_for(lambda: mon.on(state)[-1:] == [b"OFF"])
    # The Home Assistant switch's own topic: ON/OFF, as Frigate does it.
    mon.client.publish(f"{BASE}/mic/mute/set", b"ON", qos=1)
    assert mon.wait_for(lambda: mon.on(state)[-1:] == [b"ON"] and last_health()["streams"]["mic"]["muted"])
    mon.client.publish(f"{BASE}/mic/mute/set", b"OFF", qos=1)
    assert mon.wait_for(lambda: mon.on(state)[-1:] == [b"OFF"] and not last_health()["streams"]["mic"]["muted"])
    assert retained(broker, state) == b"OFF"

    bad = [
        (b"\xff\xfe", "malformed"),
        (b"[1, 2]", "malformed"),
        (b'{"cmd": "selfdestruct"}', "unknown_command"),
        (b'{"cmd": "mute", "stream": "garage"}', "unknown_stream"),
        (b'{"cmd": "mute"}', "bad_argument"),
        (b'{"cmd": "health", "extra": 1}', "bad_argument"),
        (json.dumps({"cmd": "health", "pad": "x" * 400}).encode(), "too_large"),
        (b"[" * 120 + b"]" * 120, "malformed"),  # nested: refused before json.loads (tests/reliability: 3000 deep)
        ((f"{BASE}/mic/mute/set", b"maybe"), "bad_argument"),
        ((f"{BASE}/garage/mute/set", b"ON"), "unknown_stream"),
        (b'{"cmd": "follow_up_on", "stream": "mic"}', "bad_argument"),  # mic listens for no wake word
    ]
    for payload, _ in bad:
        if isinstance(payload, tuple):
            mon.client.publish(payload[0], payload[1], qos=1)
        else:
            send(payload)
    assert mon.wait_for(lambda: len(mon.on(f"{BASE}/error")) >= len(bad)), f.log()
    errors = [validate("error", p) for p in mon.on(f"{BASE}/error")]
    # Oversized commands are answered by paho's thread before queueing, the others in order by the main thread.
    by_received = {e["received"]: e for e in errors}
    assert len(by_received) == len(bad)
    for payload, code in bad:
        body = payload[1] if isinstance(payload, tuple) else payload
        assert by_received[body[:200].decode("utf-8", errors="replace")]["error"] == code, (body[:40], code)
    garage = by_received['{"cmd": "mute", "stream": "garage"}']
    assert "garage" in garage["message"] and "mic" in garage["message"]
    assert "nests 120 levels deep" in by_received["[" * 120 + "]" * 80]["message"]
    assert "mic/mute/set" in by_received["maybe"]["message"] and "ON or OFF" in by_received["maybe"]["message"]
    assert "garage/mute/set" in by_received["ON"]["message"] and "streams: mic" in by_received["ON"]["message"]
    assert "no wake word" in by_received['{"cmd": "follow_up_on", "stream": "mic"}']["message"]
    send(json.dumps({"cmd": "reload"}))
    assert mon.wait_for(lambda: "config reloaded: kept mic" in f.log()), f.log()  # Daemon.reload, main thread
    n = len(mon.on(f"{BASE}/health"))
    send(json.dumps({"cmd": "health"}))
    assert mon.wait_for(lambda: len(mon.on(f"{BASE}/health")) > n)  # still alive and answering
    assert last_health()["streams"]["mic"]["muted"] is False  # the refusals changed nothing
    assert f.proc.poll() is None
    assert f.stop() == 0
    log = f.log()
    assert "MQTT command: reload" in log and "config reloaded: kept mic" in log and "Traceback" not in log


def test_voxnode_run_cli_publishes_status_health_discovery(tmp_path, broker, monitor_for, voxnode_cmd, validate):
    """The real `voxnode run --file` with [mqtt] on: the CLI wiring end to end (no finals yet without the
    speech pipeline; the feeder tests cover transcripts)."""
    import os
    import subprocess

    from voxnode.demo import bundled_clip

    mon = monitor_for(broker)
    cfg = write_config(tmp_path / "c.toml", broker, health={"tracemalloc_frames": 1})
    p = subprocess.run(
        [*voxnode_cmd, "run", "--config", str(cfg), "--file", str(bundled_clip()), "--duration", "3"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONMALLOC": "malloc"},
    )
    assert p.returncode == 0, p.stderr
    assert mon.wait_for(lambda: states(mon.on(f"{BASE}/status"))[-1:] == ["offline"])
    assert states(mon.on(f"{BASE}/status"))[0] == "online"
    h = validate("health", mon.on(f"{BASE}/health")[0])
    assert h["memory"]["allocator"] == "malloc" and h["memory"]["tracemalloc"]["current_bytes"] > 0
    assert h["streams"]["mic"]["state"] in ("running", "starting", "finished")
    validate("discovery", mon.on("homeassistant/device/testnode/config")[0])
    validate("discovery", mon.on("homeassistant/device/testnode/mic/config")[0])
    assert "Traceback" not in p.stderr
