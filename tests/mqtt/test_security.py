"""Password auth, ACL and TLS against a real Mosquitto (test CA made by openssl at test time)."""

from __future__ import annotations

import time

import pytest

from tests.helpers import wait_until
from tests.mqtt.broker import Broker
from tests.mqtt.conftest import assert_all_finals_arrived, write_config

BASE = "voxnode/testnode"
ACL = (
    "user edge\ntopic readwrite voxnode/testnode/#\ntopic readwrite homeassistant/#\n\n"
    "user narrow\ntopic readwrite voxnode/testnode/status\ntopic readwrite voxnode/testnode/health\n"
    "topic read voxnode/testnode/cmd\n\n"
    "user monitor\ntopic read #\ntopic write voxnode/testnode/cmd\ntopic write homeassistant/status\n"
)
USERS = {"edge": "edgepass", "narrow": "narrowpass", "monitor": "monpass"}


@pytest.fixture
def auth_broker(tmp_path):
    b = Broker(tmp_path / "broker", users=USERS, acl=ACL).start()
    yield b
    b.stop()


def test_password_file_and_acl_allow_publishing(tmp_path, auth_broker, monitor_for, feeders):
    mon = monitor_for(auth_broker, username="monitor", password="monpass")
    pw = tmp_path / "pw"
    pw.write_text("edgepass\n")
    cfg = write_config(tmp_path / "c.toml", auth_broker, username="edge", password_file=str(pw))
    f = feeders(cfg, count=5, interval=0.05, tag="auth")
    f.wait_accepted(5)
    assert mon.wait_for(lambda: len(mon.on(f"{BASE}/mic/transcript")) >= 5), f.log()
    assert_all_finals_arrived(mon, f.accepted, f"{BASE}/mic/transcript")
    f.stop()


def test_bad_password_is_one_clear_error_not_a_traceback(tmp_path, auth_broker, feeders):
    cfg = write_config(
        tmp_path / "c.toml", auth_broker, username="edge", password="wrong", reconnect_min_s=0.2, reconnect_max_s=1.0
    )
    f = feeders(cfg, count=3, interval=0.05, tag="badpw")
    f.wait_accepted(3)
    # Several refused attempts, counted where they happen (the broker's log), not slept for (2.5 s was
    # ~6 attempts): by the broker's 4th refusal the daemon has handled the first 3 CONNACKs, so a daemon
    # that logged every refusal has 3 error lines by now.
    refusals = "disconnected, not authorised."
    assert wait_until(lambda: auth_broker.log().count(refusals) >= 4, timeout=20, step=0.05), auth_broker.log()
    assert f.proc.poll() is None, "the daemon must keep running and retrying"
    f.stop()
    log = f.log()
    assert "Traceback" not in log
    refused = [line for line in log.splitlines() if "refused the connection" in line]
    assert len(refused) == 1, f"expected one error line for repeated refusals, got:\n{log}"
    assert "Not authorized" in refused[0] or "Bad user name or password" in refused[0]
    assert "mqtt.username" in refused[0]
    assert "3 final(s) not yet acknowledged stay in" in log  # kept for the next start


def test_acl_denied_final_is_logged_retried_and_kept_in_the_spool(tmp_path, auth_broker, feeders):
    # User "narrow" may publish status and health but not transcripts: under MQTT 5 the PUBACK says 135.
    cfg = write_config(
        tmp_path / "c.toml",
        auth_broker,
        username="narrow",
        password="narrowpass",
        reconnect_min_s=0.2,
        reconnect_max_s=1.0,
    )
    f = feeders(cfg, count=2, interval=0.05, tag="acl")
    f.wait_accepted(2)
    end = time.monotonic() + 10
    while time.monotonic() < end and auth_broker.log().count("Denied PUBLISH from voxnode-testnode") < 5:
        time.sleep(0.1)
    f.stop()
    log = f.log()
    # One error line for the episode; the oldest refused final is retried alone, with backoff, while running.
    assert log.count("broker refused final") == 1, log
    assert "broker refused final seq 1" in log and "later finals wait behind it" in log
    assert "Not authorized" in log and "ACL" in log and "Traceback" not in log
    assert auth_broker.log().count("Denied PUBLISH from voxnode-testnode") >= 5  # 2 first tries + retries
    assert "2 final(s) not yet acknowledged stay in" in log


def test_mosquitto_refuses_an_empty_password(tmp_path):
    """Why an empty mqtt.password_file is refused at start (tests/reliability/test_config_holes.py):
    Mosquitto refuses an empty password, even that of a user whose password was made empty with
    mosquitto_passwd, so the node would only ever retry "Not authorized"."""
    import threading

    import paho.mqtt.client as mqtt
    from paho.mqtt.enums import CallbackAPIVersion

    b = Broker(tmp_path / "broker", users={"blank": "", "edge": "edgepass"}).start()
    try:
        answers = {}
        for user, password in (("blank", ""), ("blank", None), ("edge", ""), ("edge", "edgepass")):
            said, done = [], threading.Event()
            c = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"c{len(answers)}", protocol=mqtt.MQTTv5)
            c.username_pw_set(user, password)
            c.on_connect = lambda cl, ud, flags, rc, props, said=said, done=done: (said.append(str(rc)), done.set())
            c.connect(b.host, b.port)
            c.loop_start()
            done.wait(5)
            c.disconnect()
            c.loop_stop()
            answers[(user, password)] = said
    finally:
        b.stop()
    assert answers == {
        ("blank", ""): ["Not authorized"],
        ("blank", None): ["Not authorized"],
        ("edge", ""): ["Not authorized"],
        ("edge", "edgepass"): ["Success"],  # the broker itself is answering
    }, answers


def test_mosquitto_denies_publishing_under_a_dollar_topic(tmp_path):
    """Why mqtt.topic_prefix and discovery_prefix may not start with "$" (tests/reliability/
    test_config_holes.py): Mosquitto denies a client's publish there, whatever the ACL (none here)."""
    import paho.mqtt.client as mqtt
    from paho.mqtt.enums import CallbackAPIVersion

    b = Broker(tmp_path / "broker").start()
    try:
        c = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="dollar", protocol=mqtt.MQTTv5)
        acks = {}
        c.on_publish = lambda cl, ud, mid, rc, props: acks.setdefault(mid, str(rc))
        c.connect(b.host, b.port)
        c.loop_start()
        sent = {topic: c.publish(topic, b"1", qos=1) for topic in ("$SYS/voxnode/x", "voxnode/x")}
        for info in sent.values():
            info.wait_for_publish(5)
        c.disconnect()
        c.loop_stop()
    finally:
        b.stop()
    said = {topic: acks.get(info.mid) for topic, info in sent.items()}
    assert said == {"$SYS/voxnode/x": "Not authorized", "voxnode/x": "No matching subscribers"}, said  # taken


def test_missing_password_file_is_a_config_error(tmp_path, voxnode_cmd):
    import subprocess

    from voxnode.demo import bundled_clip

    cfg = write_config(tmp_path / "c.toml", None, username="edge", password_file=str(tmp_path / "nope"))
    p = subprocess.run(  # a real WAV: /dev/null, a device, is refused first (stop 45)
        [*voxnode_cmd, "run", "--config", str(cfg), "--file", str(bundled_clip()), "--duration", "1"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert p.returncode == 1
    said = f'voxnode: error: {cfg}: mqtt.password_file = "{tmp_path / "nope"}": does not exist'
    assert p.stderr.strip().splitlines()[-1] == said, p.stderr
    assert "Traceback" not in p.stderr


def test_tls_with_test_ca(tmp_path, test_ca, monitor_for, feeders):
    b = Broker(tmp_path / "broker", tls=test_ca, host="127.0.0.1").start()
    try:
        mon = monitor_for(b, tls_ca=test_ca["ca"])
        cfg = write_config(tmp_path / "c.toml", b, host="localhost", tls=True, tls_ca=str(test_ca["ca"]))
        f = feeders(cfg, count=3, interval=0.05, tag="tls")
        f.wait_accepted(3)
        assert mon.wait_for(lambda: len(mon.on(f"{BASE}/mic/transcript")) >= 3), f.log()
        assert_all_finals_arrived(mon, f.accepted, f"{BASE}/mic/transcript")
        f.stop()
    finally:
        b.stop()


def test_tls_with_an_untrusted_ca_is_refused_clearly(tmp_path, test_ca, feeders):
    b = Broker(tmp_path / "broker", tls=test_ca).start()
    try:
        cfg = write_config(tmp_path / "c.toml", b, host="localhost", tls=True, tls_ca=str(test_ca["other_ca"]))
        f = feeders(cfg, count=1, interval=0.05, tag="tlsbad")
        f.wait_accepted(1)
        # Its second try refused too (the broker's log), not a 1.5 s sleep: it keeps retrying after the
        # TLS refusal, and its line about it is written before that second try.
        assert wait_until(lambda: b.log().count("alert unknown ca") >= 2, timeout=20, step=0.05), b.log()
        assert f.proc.poll() is None, "the daemon must keep running and retrying"
        f.stop()
        log = f.log()
        assert "TLS certificate not accepted" in log and "mqtt.tls_ca" in log, log
        assert "Traceback" not in log
    finally:
        b.stop()


def test_secrets_are_masked_in_check_config(tmp_path, voxnode_cmd):
    import subprocess

    cfg = write_config(tmp_path / "c.toml", None, username="edge", password="s3cret-pw")
    p = subprocess.run([*voxnode_cmd, "check-config", "--config", str(cfg)], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    assert "s3cret-pw" not in p.stdout
    assert 'password = "********"' in p.stdout
    assert 'username = "edge"' in p.stdout


def test_mqtt_3_1_1_is_selectable(tmp_path, broker, monitor_for, feeders):
    mon = monitor_for(broker)
    cfg = write_config(tmp_path / "c.toml", broker, protocol="3.1.1")
    f = feeders(cfg, count=3, interval=0.05, tag="v311")
    f.wait_accepted(3)
    assert mon.wait_for(lambda: len(mon.on(f"{BASE}/mic/transcript")) >= 3), f.log()
    assert_all_finals_arrived(mon, f.accepted, f"{BASE}/mic/transcript")
    f.stop()
    # mosquitto 2.0 logs its protocol enum: p2 = MQTT 3.1.1, p5 = MQTT 5
    assert "as voxnode-testnode (p2," in broker.log()


def test_password_from_a_systemd_credential(tmp_path):
    from voxnode.config.mqtt import MqttConfig
    from voxnode.mqtt.credentials import read_password

    creds = tmp_path / "creds"
    creds.mkdir()
    (creds / "mqtt-password").write_text("from-systemd\n")
    env = {"CREDENTIALS_DIRECTORY": str(creds)}
    assert read_password(MqttConfig(username="edge"), env) == "from-systemd"
    assert read_password(MqttConfig(username="edge", password="explicit"), env) == "explicit"  # config wins
    assert read_password(MqttConfig(username="edge"), {}) is None


def test_credential_password_connects(tmp_path, auth_broker, monitor_for, feeders, monkeypatch):
    creds = tmp_path / "creds"
    creds.mkdir()
    (creds / "mqtt-password").write_text("edgepass\n")
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(creds))  # inherited by the feeder, as systemd sets it
    mon = monitor_for(auth_broker, username="monitor", password="monpass")
    cfg = write_config(tmp_path / "c.toml", auth_broker, username="edge")
    f = feeders(cfg, count=2, interval=0.05, tag="cred")
    f.wait_accepted(2)
    assert mon.wait_for(lambda: len(mon.on(f"{BASE}/mic/transcript")) >= 2), f.log()
    f.stop()
