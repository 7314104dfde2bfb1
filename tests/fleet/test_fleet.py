"""`voxnode fleet` against a real Mosquitto: two running daemons on ALSA FIFO microphones, one of
them stalled; the broker's errors; retained messages of older releases and of a read-only user."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import jsonschema
import pytest

from tests.alsa_env import ROOT, alsa_file_pcm
from tests.helpers import wait_until
from tests.mqtt.broker import Broker, Monitor
from tests.systemd.helpers import PacedMic
from voxnode.events import iso8601
from voxnode.process_stop import stop_process

SCHEMAS = ROOT / "docs" / "schemas"


def fleet(config: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "voxnode", "fleet", "--config", str(config), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONMALLOC": "malloc"},
    )


# Starts the rest of its command line with SIGINT ignored, as a shell without job control (a script's
# `cmd &`) starts its background jobs; Python then installs no KeyboardInterrupt handler of its own.
SIGINT_IGNORED = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
)


def live_fleet(config: Path, *args: str, sigint_ignored: bool = False) -> subprocess.Popen:
    """`voxnode fleet --json` live: one JSON document per refresh on its stdout."""
    launcher = ["-c", SIGINT_IGNORED] if sigint_ignored else []
    return subprocess.Popen(
        [sys.executable, *launcher, "-m", "voxnode", "fleet", "--config", str(config), "--json", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def ctrl_c(live: subprocess.Popen, timeout: float) -> tuple[str, str, float]:
    """SIGINT; then what it printed after, its stderr, and the seconds it took to exit. One still running
    `timeout` s later is killed (never left behind) and fails the test."""
    live.send_signal(signal.SIGINT)
    sent = time.monotonic()
    try:
        out, err = live.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        live.kill()
        out, err = live.communicate()
        raise AssertionError(f"still running {timeout} s after Ctrl-C; stderr: {err[-2000:]!r}") from None
    return out, err, time.monotonic() - sent


@contextmanager
def silent_port(host: str, port: int) -> Iterator[None]:
    """`port` held by a listener that never accepts, its accept queue full: Linux drops every further
    SYN, so a connect there waits for its own timeout (a broker gone silent, a black-holed host)."""
    with socket.socket() as hole:
        hole.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        hole.bind((host, port))
        hole.listen(0)
        with socket.create_connection((host, port), timeout=2):  # fills the queue (one, for a backlog of 0)
            with pytest.raises(TimeoutError), socket.create_connection((host, port), timeout=0.5):
                pass  # the next SYN is dropped
            yield


def connecting_to(pid: int, port: int) -> bool:
    """Whether process `pid` has a TCP connect to `port` waiting for its SYN to be answered (SYN_SENT in
    /proc/net/tcp, one of its own sockets): the state a silent port leaves a connect in."""
    own = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue  # closed meanwhile
        if target.startswith("socket:["):
            own.add(target[8:-1])
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "02" and int(fields[2].split(":")[1], 16) == port and fields[9] in own:
            return True
    return False


def mqtt_section(broker: Broker, **extra: str) -> str:
    lines = [f'host = "{broker.host}"', f"port = {broker.port}", *(f"{k} = {v}" for k, v in extra.items())]
    return "[mqtt]\n" + "\n".join(lines) + "\n"


@pytest.fixture
def broker(tmp_path):
    b = Broker(tmp_path / "broker").start()
    yield b
    b.stop()


class Node:
    """`voxnode run` as node `name`, its microphone an ALSA FIFO PCM fed in real time."""

    def __init__(self, work: Path, name: str, broker: Broker, alsa_home: Path):
        self.name = name
        self.dir = work / name
        self.dir.mkdir()
        self.mic = PacedMic(alsa_home / f"{name}.fifo")
        cfg = self.dir / "config.toml"
        cfg.write_text(
            f'[audio]\ndevice = "vx_{name}"\n\n'
            + mqtt_section(broker, enabled="true", node_id=f'"{name}"', spool_path=f'"{self.dir / "spool.sqlite"}"')
            + "\n[health]\ninterval_s = 1.0\n"
        )
        self.config = cfg
        env = {**os.environ, "PYTHONMALLOC": "malloc", "XDG_CONFIG_HOME": str(alsa_home)}
        with open(self.dir / "stderr.log", "wb") as log:  # the child writes to its own descriptor
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "voxnode", "run", "--config", str(cfg)],
                stdout=subprocess.DEVNULL,
                stderr=log,
                env=env,
            )

    def log(self) -> str:
        return (self.dir / "stderr.log").read_text(errors="replace")

    def stop(self) -> None:
        stop_process(self.proc, 20)
        self.mic.close()


@pytest.fixture
def two_nodes(tmp_path, broker):
    alsa_home = tmp_path / "alsa-home"
    (alsa_home / "alsa").mkdir(parents=True)
    pcms = ""
    for name in ("a", "b"):
        os.mkfifo(alsa_home / f"{name}.fifo")
        pcms += alsa_file_pcm(f"vx_{name}", alsa_home / f"{name}.fifo")
    (alsa_home / "alsa" / "asoundrc").write_text(pcms)
    nodes = [Node(tmp_path, "a", broker, alsa_home), Node(tmp_path, "b", broker, alsa_home)]
    yield nodes
    for n in nodes:
        n.stop()


def latest_health(mon: Monitor, node: str) -> dict:
    got = mon.json_on(f"voxnode/{node}/health")
    return got[-1] if got else {}


def test_fleet_once_reports_both_nodes_and_marks_the_stalled_one(tmp_path, broker, two_nodes):
    a, b = two_nodes
    fleet_cfg = tmp_path / "fleet.toml"
    fleet_cfg.write_text(mqtt_section(broker))
    mon = Monitor(broker, topics=("voxnode/+/health", "voxnode/+/status"), client_id="test-monitor")
    try:

        def flowing(node: Node) -> bool:
            st = latest_health(mon, node.name).get("streams", {}).get("mic", {})
            age = st.get("audio_age_s")
            return st.get("state") == "running" and st.get("frames", 0) > 50 and age is not None and age < 1

        assert wait_until(lambda: flowing(a) and flowing(b), timeout=90, step=0.2), (
            json.dumps(latest_health(mon, "a").get("streams")) + a.log()[-2000:] + b.log()[-2000:]
        )
        assert wait_until(lambda: latest_health(mon, "b").get("model", {}).get("loaded"), timeout=60)
        healthy = fleet(fleet_cfg, "--once", "--json", "--stall-after", "3")
        doc = json.loads(healthy.stdout)
        assert healthy.returncode == 0, healthy.stdout + healthy.stderr
        assert [n["node"] for n in doc["nodes"]] == ["a", "b"] and doc["nodes_with_problems"] == 0

        b.mic.pause()  # the FIFO stays open without data: the capture's read blocks, like a hung USB mic
        assert wait_until(
            lambda: (latest_health(mon, "b")["streams"]["mic"].get("audio_age_s") or 0) > 3.5, timeout=30, step=0.2
        )
        r = fleet(fleet_cfg, "--once", "--json", "--stall-after", "3")
        assert r.returncode == 1, r.stdout + r.stderr
        assert "Traceback" not in r.stderr
        doc = json.loads(r.stdout)
        nodes = {n["node"]: n for n in doc["nodes"]}
        assert set(nodes) == {"a", "b"} and doc["nodes_with_problems"] == 1
        assert nodes["a"]["problems"] == [] and nodes["a"]["status"] == "online"
        assert len(nodes["b"]["problems"]) == 1 and nodes["b"]["problems"][0].startswith("stream mic stalled")
        assert nodes["b"]["streams"]["mic"]["audio_age_s"] > 3
        for n in nodes.values():  # what the status message says each runs
            assert (
                n["model"] == "whisper-tiny.en" and len(n["config_sha256"]) == 64 and n["kernel"] == os.uname().release
            )
            assert n["version"] and n["uptime_s"] > 0 and n["rss_bytes"] > 10e6
        assert nodes["a"]["config_sha256"] != nodes["b"]["config_sha256"]  # their devices differ

        table = fleet(fleet_cfg, "--once", "--stall-after", "3")
        assert table.returncode == 1
        lines = table.stdout.splitlines()
        assert any(line.startswith("! b ") for line in lines), table.stdout  # marked
        assert any(line.startswith("  a ") for line in lines), table.stdout  # not marked
        assert "b: stream mic stalled: no audio for" in table.stdout

        status_schema = json.loads((SCHEMAS / "status.json").read_text())
        for node in ("a", "b"):
            jsonschema.validate(json.loads(mon.on(f"voxnode/{node}/status")[-1]), status_schema)
    finally:
        mon.close()


def test_broker_errors_are_one_line(tmp_path):
    from voxnode.mqtt.localbroker import free_port

    cfg = tmp_path / "fleet.toml"
    cfg.write_text(f'[mqtt]\nhost = "127.0.0.1"\nport = {free_port()}\n')  # nothing listens there
    r = fleet(cfg, "--once", "--timeout", "3")
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [
        f"voxnode: error: cannot connect to MQTT broker 127.0.0.1:{cfg.read_text().split('port = ')[1].strip()}: "
        f"Connection refused (check mqtt.host and mqtt.port in {cfg})"
    ]
    bad = tmp_path / "bad.toml"
    bad.write_text("[mqtt]\nprot = 1883\n")
    r = fleet(bad, "--once")
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1 and "mqtt.prot" in r.stderr
    assert "Traceback" not in r.stderr


def test_refused_login_is_one_line(tmp_path):
    b = Broker(tmp_path / "auth", users={"ops": "secret"}).start()
    try:
        cfg = tmp_path / "fleet.toml"
        cfg.write_text(mqtt_section(b, username='"ops"', password='"wrong"'))
        r = fleet(cfg, "--once", "--timeout", "5")
        assert r.returncode == 1 and "Traceback" not in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
        assert "refused the connection" in r.stderr and "mqtt.username" in r.stderr
    finally:
        b.stop()


def test_read_only_user_older_releases_and_stale_reports(tmp_path):
    """Retained messages published here stand in for nodes: one of an older release (plain-text status),
    one whose health stopped coming, one cleared. The fleet user may only read: its sync message is
    refused by the ACL, and the quiet spell after the SUBACK ends the wait instead."""
    acl = "user ops\ntopic read voxnode/#\n\nuser pub\ntopic readwrite #\n"
    b = Broker(tmp_path / "acl", users={"ops": "o", "pub": "p"}, acl=acl).start()
    pub = Monitor(b, topics=("nothing/#",), username="pub", password="p", client_id="publisher")
    try:
        old_time = iso8601(1_000_000_000.0)  # 2001: long stale
        health = {
            "node": "x",
            "version": "0.0.9",
            "time": old_time,
            "uptime_s": 10.0,
            "process": {"cpu_percent": 1.0, "rss_bytes": 100_000_000},
            "streams": {"mic": {"state": "running", "muted": False, "dropped_frames": 0}},
        }
        msgs = [
            ("voxnode/old/status", b"online"),
            ("voxnode/old/health", json.dumps({**health, "node": "old", "time": iso8601(time.time())})),
            ("voxnode/stale/status", json.dumps({"state": "online", "node": "stale"})),
            ("voxnode/stale/health", json.dumps({**health, "node": "stale"})),
            ("voxnode/gone/status", b""),
        ]
        for topic, payload in msgs:
            pub.client.publish(topic, payload, qos=1, retain=True).wait_for_publish(5)
        cfg = tmp_path / "fleet.toml"
        cfg.write_text(mqtt_section(b, username='"ops"', password='"o"'))
        r = fleet(cfg, "--once", "--json", "--timeout", "10")
        assert r.returncode == 1, r.stderr
        nodes = {n["node"]: n for n in json.loads(r.stdout)["nodes"]}
        assert set(nodes) == {"old", "stale"}
        assert nodes["old"]["status"] == "online" and nodes["old"]["problems"] == []
        assert nodes["old"]["version"] == "0.0.9"
        assert (
            nodes["stale"]["problems"][0].startswith("health ")
            and "old (due every 30 s)" in nodes["stale"]["problems"][0]
        )
        # Live: one JSON document per refresh, until Ctrl-C (exit 0).
        live = live_fleet(cfg, "--interval", "0.2")
        try:
            docs = [json.loads(live.stdout.readline()) for _ in range(3)]
        finally:
            _, err, _ = ctrl_c(live, 15)
        assert live.returncode == 0 and "Traceback" not in err, err
        assert all(sorted(n["node"] for n in d["nodes"]) == ["old", "stale"] for d in docs)
        assert docs[0]["time"] < docs[2]["time"] and docs[2]["connected"]
    finally:
        pub.close()
        b.stop()


def test_ctrl_c_ends_the_live_view_started_with_sigint_ignored(tmp_path, broker):
    """Started as a script's `voxnode fleet &` starts it (SIGINT ignored), Ctrl-C still ends the live
    view: exit 0, nothing on stderr. It used to run on, printing, for ever."""
    cfg = tmp_path / "fleet.toml"
    cfg.write_text(mqtt_section(broker))
    live = live_fleet(cfg, "--interval", "0.2", sigint_ignored=True)
    try:
        docs = [json.loads(live.stdout.readline()) for _ in range(2)]
    finally:
        _, err, _ = ctrl_c(live, 15)
    assert live.returncode == 0 and err == "", err
    assert docs[1]["connected"] and docs[1]["broker"] == f"{broker.host}:{broker.port}"


def test_ctrl_c_while_reconnecting_to_a_silent_broker_does_not_wait_for_the_connect(tmp_path, broker):
    """The broker goes and its port falls silent: paho's thread is in a reconnect's connect until
    --timeout (30 s here). Ctrl-C ends the command at once; it used to wait for that connect (18.7 s
    after Ctrl-C with --timeout 20)."""
    cfg = tmp_path / "fleet.toml"
    cfg.write_text(mqtt_section(broker))
    live = live_fleet(cfg, "--interval", "0.2", "--timeout", "30")
    try:
        assert json.loads(live.stdout.readline())["connected"]
        broker.stop()
        with silent_port(broker.host, broker.port):
            # It notices the loss at once, waits paho's 1 s reconnect delay, then connects into the silence:
            # Ctrl-C once that connect is under way (its socket in SYN_SENT), not after a 2 s sleep.
            assert wait_until(lambda: not json.loads(live.stdout.readline())["connected"], timeout=10)
            assert wait_until(lambda: connecting_to(live.pid, broker.port), timeout=10, step=0.05)
            _, err, took = ctrl_c(live, 45)
    finally:
        if live.poll() is None:
            live.kill()
            live.communicate()
    assert live.returncode == 0 and err == "", err
    assert took < 5, f"{took:.1f} s from Ctrl-C to exit"
