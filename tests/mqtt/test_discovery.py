"""Home Assistant discovery against a real Mosquitto: what the node announces, tombstones for what it
no longer has (reload, restart with another config, an older layout), discovery switched off, and
`voxnode mqtt-forget` (what `make uninstall` / `make purge` run).

MqttBridge and the health reporter run in-process with a stand-in daemon (tests/mqtt/standin.py):
no audio is needed to decide what to announce. tests/ha/ checks the same payloads inside a real Home Assistant.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import time
from pathlib import Path

from tests.mqtt.broker import Broker, retained
from tests.mqtt.conftest import ROOT, write_config
from tests.mqtt.standin import WiredBridge, mqtt_config
from voxnode.config import Config
from voxnode.config.mqtt import node_id_for
from voxnode.health.reporter import HealthReporter
from voxnode.mqtt.announcer import Announcer
from voxnode.mqtt.discovery import StreamDevice
from voxnode.mqtt.topics import Topics
from voxnode.reload import ReloadResult
from voxnode.standin import StandInDaemon

BASE = "voxnode/testnode"
NODE_TOPIC = "homeassistant/device/testnode/config"


def stream_topic(s: str) -> str:
    return f"homeassistant/device/testnode/{s}/config"


class Running:
    """An MqttBridge and the daemon's health reporter, ticked by the test as the daemon's main loop
    would: the bridge, then the reporter (last, as the daemon orders its hooks)."""

    def __init__(self, config: Config, daemon: StandInDaemon, *, thermal_root: str = "/", board_root: str = "/"):
        self.reporter = HealthReporter(config.health, node_id_for(config.mqtt), daemon, thermal_root=thermal_root)
        self.svc = WiredBridge(config, daemon, reporter=self.reporter, board_root=board_root)
        self.daemon = daemon
        self.svc.start()
        self.reporter.on_ready(daemon.view)

    def tick_until(self, cond, timeout: float = 10.0) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            now = time.monotonic()
            self.svc.tick(self.daemon.view, now)
            self.reporter.tick(self.daemon.view, now)
            if cond():
                return True
            time.sleep(0.05)
        return cond()

    def close(self):
        self.svc.stop(time.monotonic())


def retained_json(broker: Broker, topic: str) -> dict | None:
    raw = retained(broker, topic)
    return json.loads(raw) if raw else None


def wait_retained(broker, topic, cond, timeout=10.0) -> dict | None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = retained_json(broker, topic)
        if cond(got):
            return got
        time.sleep(0.1)
    return retained_json(broker, topic)


def is_tombstone(cmps: dict) -> bool:
    return all(set(c) == {"p"} for c in cmps.values())


def test_a_stream_removed_on_reload_is_sent_as_tombstones_and_its_mute_state_cleared(tmp_path, broker, validate):
    config = mqtt_config(tmp_path, broker, {"kitchen": "Kitchen", "hall": ""})
    daemon = StandInDaemon(config)
    run = Running(config, daemon)
    try:
        assert run.tick_until(
            lambda: retained(broker, stream_topic("hall")) and retained(broker, f"{BASE}/hall/mute/state")
        )
        hall = validate("discovery", retained(broker, stream_topic("hall")))
        kitchen = validate("discovery", retained(broker, stream_topic("kitchen")))
        assert "sa" not in hall["dev"] and kitchen["dev"]["sa"] == "Kitchen"
        daemon.config = dataclasses.replace(config, streams=config.streams[:1])  # hall removed from the file
        run.svc.on_reloaded(daemon.view, ReloadResult(ok=True))
        assert run.tick_until(
            lambda: is_tombstone(
                (retained_json(broker, stream_topic("hall")) or {}).get("cmps") or {"x": {"p": 1, "more": 1}}
            )
        )
        gone = validate("discovery", retained(broker, stream_topic("hall")))
        # Every component hall had, by platform: Home Assistant removes each, then the device.
        assert {k: c["p"] for k, c in gone["cmps"].items()} == {k: c["p"] for k, c in hall["cmps"].items()}
        assert retained(broker, f"{BASE}/hall/mute/state") is None
        assert not is_tombstone(retained_json(broker, stream_topic("kitchen"))["cmps"])
    finally:
        run.close()


def test_a_stream_removed_while_the_daemon_was_down_is_removed_from_what_the_broker_retains(tmp_path, broker):
    first = mqtt_config(tmp_path, broker, {"kitchen": "", "hall": ""})
    run = Running(first, StandInDaemon(first))
    assert run.tick_until(lambda: retained(broker, stream_topic("hall")))
    run.close()
    second = mqtt_config(tmp_path, broker, {"kitchen": ""})
    run = Running(second, StandInDaemon(second))
    try:
        # Learnt from the retained copy the broker hands over on subscribe, not from local state.
        assert run.tick_until(
            lambda: (
                (retained_json(broker, stream_topic("hall")) or {}).get("cmps")
                and is_tombstone(retained_json(broker, stream_topic("hall"))["cmps"])
            ),
            15,
        )
        assert run.tick_until(lambda: retained(broker, f"{BASE}/hall/mute/state", timeout=0.5) is None)
        assert retained(broker, f"{BASE}/kitchen/mute/state") == b"OFF"
    finally:
        run.close()


def test_components_no_longer_announced_are_tombstoned_and_the_tombstones_kept(tmp_path, broker, monitor_for):
    # What an older voxnode left: one device with per-stream entities and a temperature sensor.
    old = {
        "dev": {"ids": ["voxnode_testnode"], "name": "voxnode testnode"},
        "o": {"name": "voxnode"},
        "avty_t": f"{BASE}/status",
        "cmps": {
            "mic_transcript": {"p": "sensor", "name": "mic transcript", "unique_id": "x1", "state_topic": "a"},
            "temperature": {"p": "sensor", "name": "SoC temperature", "unique_id": "x2", "state_topic": "b"},
            "rss": {"p": "sensor", "name": "Memory (RSS)", "unique_id": "x3", "state_topic": "c"},
        },
    }
    mon = monitor_for(broker)
    mon.client.publish(NODE_TOPIC, json.dumps(old), qos=1, retain=True).wait_for_publish(5)
    config = mqtt_config(tmp_path, broker, {"mic": ""})
    no_thermal = tmp_path / "empty-root"  # no /sys/class/thermal: the board has no thermal zone
    no_thermal.mkdir()
    for attempt in range(2):  # the second run reads the tombstones the first one left, and keeps them
        seen = len(mon.on(NODE_TOPIC))
        run = Running(config, StandInDaemon(config), thermal_root=str(no_thermal), board_root=str(no_thermal))
        try:
            assert run.tick_until(lambda seen=seen: len(mon.on(NODE_TOPIC)) > seen), attempt
            run.tick_until(lambda: False, 1.0)
        finally:
            run.close()
        # Every announcement of the run, the first one included (it waits for the retained copy):
        announced = [json.loads(p) for t, p, r in [m for m in mon.messages if m[0] == NODE_TOPIC][seen:] if p]
        assert announced, attempt
        for node in announced:
            assert node["cmps"]["temperature"] == {"p": "sensor"} and node["cmps"]["mic_transcript"] == {"p": "sensor"}
            assert node["cmps"]["rss"]["unique_id"] == "voxnode_testnode_rss"  # still announced: updated
            assert "hw" not in node["dev"]  # no /proc/device-tree/model here
        assert len(announced) == 1, f"run {attempt} announced the node {len(announced)} times"


def test_optional_entities_follow_what_the_node_reports(tmp_path, broker):
    board = tmp_path / "board"
    zone = board / "sys/class/thermal/thermal_zone0"
    zone.mkdir(parents=True)
    (zone / "temp").write_text("51234\n")
    (zone / "type").write_text("cpu-thermal\n")
    fw = board / "sys/devices/platform/soc/soc:firmware"
    fw.mkdir(parents=True)
    (fw / "get_throttled").write_text("0x50005\n")  # under-voltage and throttled now
    (board / "proc/device-tree").mkdir(parents=True)
    (board / "proc/device-tree/model").write_bytes(b"Raspberry Pi 5 Model B Rev 1.0\x00")
    config = mqtt_config(tmp_path, broker, {"kitchen": ""})
    run = Running(config, StandInDaemon(config), thermal_root=str(board), board_root=str(board))
    try:
        assert run.tick_until(lambda: retained(broker, stream_topic("kitchen")) and retained(broker, NODE_TOPIC))
        node = retained_json(broker, NODE_TOPIC)
        assert node["dev"]["hw"] == "Raspberry Pi 5 Model B Rev 1.0"
        assert node["cmps"]["temperature"]["device_class"] == "temperature"
        assert node["cmps"]["throttled"]["device_class"] == "problem"
        assert run.reporter.latest["thermal"]["throttled"]["under_voltage"] is True
    finally:
        run.close()


def test_without_those_fields_nothing_is_announced_that_would_stay_unknown(tmp_path, broker):
    bare = tmp_path / "bare"
    bare.mkdir()
    config = mqtt_config(tmp_path, broker, {"kitchen": ""})
    run = Running(config, StandInDaemon(config), thermal_root=str(bare), board_root=str(bare))
    try:
        assert run.tick_until(lambda: retained(broker, stream_topic("kitchen")) and retained(broker, NODE_TOPIC))
        node, kitchen = retained_json(broker, NODE_TOPIC), retained_json(broker, stream_topic("kitchen"))
        for key in ("temperature", "throttled"):
            assert key not in node["cmps"], key
        # A stream's entities each read a field every report carries: none is optional.
        assert set(kitchen["cmps"]) == {
            "transcript",
            "final",
            "partial",
            "last_final",
            "mute",
            "playing",
            "capture",
            "latency",
            "dropped_frames",
            "xruns",
            "noise_floor",
            "speech_snr",
        }
        assert run.reporter.latest["thermal"] == {"soc_temp_c": None, "zones_c": {}, "throttled": None}
        # The spool's state and the finals lost are in every report MQTT sends: always announced, and fed.
        mqtt = run.reporter.latest["mqtt"]
        assert mqtt["spool_writable"] is True and mqtt["spool_error"] == "" and mqtt["unstored_lost"] == 0
        spool = node["cmps"]["spool_problem"]
        assert spool["device_class"] == "problem" and "spool_writable" in spool["value_template"]
        assert "unstored_lost" in node["cmps"]["finals_lost"]["value_template"]
    finally:
        run.close()


def test_discovery_switched_off_leaves_empty_retained_configs(tmp_path, broker):
    on = mqtt_config(tmp_path, broker, {"kitchen": "", "hall": ""})
    run = Running(on, StandInDaemon(on))
    assert run.tick_until(lambda: retained(broker, stream_topic("hall")) and retained(broker, NODE_TOPIC))
    run.close()
    off = mqtt_config(tmp_path, broker, {"kitchen": ""}, discovery=False)
    run = Running(off, StandInDaemon(off))
    try:
        assert run.tick_until(
            lambda: all(
                retained(broker, t, timeout=0.5) is None
                for t in (NODE_TOPIC, stream_topic("kitchen"), stream_topic("hall"))
            ),
            15,
        )
        assert retained(broker, f"{BASE}/kitchen/mute/state") == b"OFF"  # the node itself still works
    finally:
        run.close()


def test_announcer_sends_a_removed_streams_tombstones_once():
    topics = Topics("voxnode", "n")
    a = Announcer(topics, enabled=True, board=None, backlog_limit=50)
    a.set_streams([StreamDevice("kitchen"), StreamDevice("hall")])
    assert a.pending() == []  # nothing before the first health report: entities depend on it
    a.add_capabilities({"streams": {}, "thermal": {"soc_temp_c": None, "throttled": None}, "mqtt": {}})
    assert {t for t, _ in a.pending()} == {
        topics.discovery,
        topics.stream_discovery("kitchen"),
        topics.stream_discovery("hall"),
    }
    assert a.pending() == []  # nothing changed: nothing sent (it runs every tick)
    a.set_streams([StreamDevice("kitchen")])
    out = dict(a.pending())
    assert set(out) == {topics.stream_discovery("hall")}
    assert is_tombstone(json.loads(out[topics.stream_discovery("hall")])["cmps"])
    a.force()
    assert topics.stream_discovery("hall") not in dict(a.pending())
    a.set_streams([StreamDevice("kitchen"), StreamDevice("hall", "Hall")])  # back again: a full config
    back = json.loads(dict(a.pending())[topics.stream_discovery("hall")])
    assert back["dev"]["sa"] == "Hall" and not is_tombstone(back["cmps"])


def test_an_area_change_on_reload_reannounces_without_restarting_the_capture(tmp_path, broker):
    from voxnode.reload import plan_reload

    config = mqtt_config(tmp_path, broker, {"kitchen": ""})
    moved = dataclasses.replace(config, streams=(dataclasses.replace(config.streams[0], area="Living room"),))
    assert plan_reload(config, moved).keep == ("kitchen",)  # the area does not touch the capture
    daemon = StandInDaemon(config)
    run = Running(config, daemon)
    try:
        assert run.tick_until(lambda: retained(broker, stream_topic("kitchen")))
        daemon.config = moved
        run.svc.on_reloaded(daemon.view, ReloadResult(ok=True))
        assert run.tick_until(
            lambda: (retained_json(broker, stream_topic("kitchen")) or {}).get("dev", {}).get("sa") == "Living room"
        )
    finally:
        run.close()


def test_a_wake_word_gives_its_stream_a_wake_event_and_turning_it_off_on_reload_tombstones_it(
    tmp_path, broker, validate
):
    from voxnode.config.wake import WakeConfig

    plain = mqtt_config(tmp_path, broker, {"kitchen": "", "hall": ""})
    config = dataclasses.replace(plain, wake=WakeConfig(enabled=True))
    daemon = StandInDaemon(config)
    run = Running(config, daemon)
    try:
        assert run.tick_until(
            lambda: retained(broker, stream_topic("kitchen")) and retained(broker, stream_topic("hall"))
        )
        for s in ("kitchen", "hall"):
            cmps = validate("discovery", retained(broker, stream_topic(s)))["cmps"]
            wake = cmps["wake"]
            assert wake["p"] == "event" and wake["event_types"] == ["wake"] and wake["qos"] == 1
            assert wake["state_topic"] == f"{BASE}/{s}/wake" and wake["unique_id"] == f"voxnode_testnode_{s}_wake"
            assert "value_json.wake_word" in cmps["final"]["value_template"]  # the Final event names the word
        # hall stops listening for a wake word (its `wake` key): its wake entity goes, the rest stays.
        daemon.config = dataclasses.replace(
            config, streams=(config.streams[0], dataclasses.replace(config.streams[1], wake="off"))
        )
        run.svc.on_reloaded(daemon.view, ReloadResult(ok=True))
        assert run.tick_until(
            lambda: (retained_json(broker, stream_topic("hall")) or {}).get("cmps", {}).get("wake") == {"p": "event"}
        )
        hall = validate("discovery", retained(broker, stream_topic("hall")))["cmps"]
        assert not is_tombstone(hall) and set(hall["transcript"]) != {"p"}
        assert "wake_word" not in hall["final"]["value_template"]
        assert set(retained_json(broker, stream_topic("kitchen"))["cmps"]["wake"]) != {"p"}
    finally:
        run.close()


def test_area_names_are_checked_like_every_other_setting(tmp_path):
    from voxnode.config import load_config
    from voxnode.errors import ConfigError

    bad = tmp_path / "bad.toml"
    bad.write_text('[[streams]]\nname = "kitchen"\ndevice = "null"\narea = "Kit\\u0007chen"\n')
    try:
        load_config(str(bad))
    except ConfigError as e:
        assert "streams" in str(e) and "area" in str(e), e
    else:
        raise AssertionError("a control character in an area was accepted")


def test_mqtt_forget_and_uninstall_clear_every_retained_message_of_the_node(tmp_path, broker, feeders, voxnode_cmd):
    cfg = write_config(tmp_path / "c.toml", broker, stream="kitchen")
    f = feeders(cfg, count=1, interval=0.1, tag="forget")
    f.wait_accepted(1)
    topics = [NODE_TOPIC, stream_topic("kitchen"), f"{BASE}/status", f"{BASE}/health", f"{BASE}/kitchen/mute/state"]
    topics.append(f"{BASE}/kitchen/playing/state")
    end = time.monotonic() + 15
    while time.monotonic() < end and not all(retained(broker, t, timeout=0.5) for t in topics):
        time.sleep(0.1)
    assert f.stop() == 0
    assert all(retained(broker, t, timeout=0.5) for t in topics)
    p = subprocess.run([*voxnode_cmd, "mqtt-forget", "--config", str(cfg)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert set(p.stdout.split()) - {"cleared"} == set(topics)
    assert all(retained(broker, t, timeout=0.5) is None for t in topics)

    # `make uninstall` (scripts/install.sh) runs it with the installed config, after stopping the service.
    f = feeders(cfg, count=1, interval=0.1, tag="forget2")
    f.wait_accepted(1)
    assert f.stop() == 0
    assert retained(broker, NODE_TOPIC)
    root = tmp_path / "root"
    (root / "etc/voxnode").mkdir(parents=True)
    (root / "etc/voxnode/config.toml").write_text(cfg.read_text())
    env = {**os.environ, "VOXNODE_BIN": str(Path(voxnode_cmd[0]).parent / "voxnode")}
    p = subprocess.run(
        [str(ROOT / "scripts/install.sh"), "uninstall", "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert p.returncode == 0, p.stderr + p.stdout
    assert "removed 6 retained" in p.stdout or "6 retained message(s) removed" in p.stderr + p.stdout, p.stdout
    assert all(retained(broker, t, timeout=0.5) is None for t in topics)


def test_mqtt_forget_names_an_unreachable_broker_in_one_line(tmp_path, voxnode_cmd):
    b = Broker(tmp_path / "never-started")  # a free port nobody listens on
    cfg = write_config(tmp_path / "c.toml", b)
    p = subprocess.run([*voxnode_cmd, "mqtt-forget", "--config", str(cfg)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1
    assert (
        p.stderr.strip()
        .splitlines()[-1]
        .startswith(f"voxnode: error: mqtt-forget: cannot connect to the broker 127.0.0.1:{b.port}")
    )
    assert "Traceback" not in p.stderr
