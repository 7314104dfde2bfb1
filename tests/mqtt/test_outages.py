"""No lost transcripts: broker stopped (SIGTERM, SIGKILL), a 60 s outage, a black-holed broker, and the
daemon restarted (cleanly and by SIGKILL) while the broker is down. Real Mosquitto, real daemon process
(tests/mqtt/feeder.py: the production Daemon + MQTT wiring fed synthetic finals until the stream
pipeline lands). Each test asserts every accepted final arrives, in order, without gaps; duplicates only
with the same id and seq."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers import wait_until
from tests.mqtt.broker import Broker
from tests.mqtt.conftest import assert_all_finals_arrived, write_config

# Nearly all waiting (116 s wall for 8.8 s of CPU here: brokers stopped, a 60 s outage, keep-alive
# timeouts) and nothing timed against the machine's speed: `make test` runs this module beside lint and
# the venv builds (the `waiting` marker), not after them.
pytestmark = pytest.mark.waiting

TOPIC = "voxnode/testnode/mic/transcript"


@pytest.fixture
def pbroker(tmp_path):
    """Persistent broker: its sessions survive SIGTERM restarts (and SIGKILLs, via a 1 s autosave)."""
    b = Broker(tmp_path / "broker", persistence=True).start()
    yield b
    b.stop()


def saved_with_monitor(broker: Broker) -> None:
    """Until the broker has autosaved (every second) since the monitor's subscription (its SUBACK in the
    broker's log): a SIGKILLed broker comes back with the monitor's session only from that save."""

    def saved() -> bool:
        log = broker.log()
        subscribed = log.rfind("Sending SUBACK to monitor")
        return subscribed >= 0 and "Saving in-memory database" in log[subscribed:]

    assert wait_until(saved, timeout=10, step=0.05), broker.log()[-2000:]


def spooled(spool: Path, ids: list[str]) -> bool:
    """Whether every final in `ids` is committed to the spool (its file, read as the next start reads it)."""
    with contextlib.closing(sqlite3.connect(f"file:{spool}?mode=ro", uri=True, timeout=5)) as db:
        payloads = [json.loads(p)["id"] for (p,) in db.execute("SELECT payload FROM spool")]
    return set(ids) <= set(payloads)


def _report(name: str, stats: dict, accepted: int) -> None:
    print(
        f"\n{name}: accepted {accepted}, received {stats['received']}, unique {stats['unique']}, "
        f"duplicates {stats['duplicates']}, lost 0"
    )


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_broker_stopped_mid_stream(tmp_path, pbroker, monitor_for, feeders, sig):
    mon = monitor_for(pbroker)
    saved_with_monitor(pbroker)  # the monitor's session in the broker's save (matters for SIGKILL)
    f = feeders(write_config(tmp_path / "c.toml", pbroker), count=80, interval=0.05, tag=sig.name)
    f.wait_accepted(20)
    pbroker.stop(sig)
    f.wait_accepted(60)  # 40 finals while the broker is down
    pbroker.start()
    f.wait_accepted(80)
    assert mon.wait_for(lambda: len({m["seq"] for m in mon.json_on(TOPIC)}) >= 80, 30), f.log()
    stats = assert_all_finals_arrived(mon, f.accepted, TOPIC)
    _report(f"broker {sig.name}", stats, len(f.accepted))
    assert f.stop() == 0
    assert "lost the broker" in f.log() and "Traceback" not in f.log()


@pytest.mark.slow
def test_sixty_second_outage(tmp_path, pbroker, monitor_for, feeders):
    mon = monitor_for(pbroker)
    saved_with_monitor(pbroker)
    cfg = write_config(tmp_path / "c.toml", pbroker, reconnect_max_s=30.0)  # the default backoff ceiling
    f = feeders(cfg, count=140, interval=0.5, tag="outage60")
    f.wait_accepted(10)
    pbroker.stop(signal.SIGTERM)
    down = time.monotonic()
    time.sleep(60)  # the outage itself
    during = len(f.accepted) - 10
    pbroker.start()
    back = time.monotonic()
    assert mon.wait_for(lambda: len({m["seq"] for m in mon.json_on(TOPIC)}) >= 10 + during, 45), f.log()
    caught_up = time.monotonic() - back
    f.wait_accepted(140, timeout=60)
    assert mon.wait_for(lambda: len({m["seq"] for m in mon.json_on(TOPIC)}) >= 140, 15), f.log()
    stats = assert_all_finals_arrived(mon, f.accepted, TOPIC)
    _report(
        f"60 s outage ({back - down:.0f} s down, {during} finals spooled, caught up {caught_up:.1f} s after "
        "the broker returned)",
        stats,
        len(f.accepted),
    )
    assert during >= 100
    assert f.stop() == 0


def test_daemon_restarted_while_the_broker_is_down(tmp_path, pbroker, monitor_for, feeders):
    mon = monitor_for(pbroker)
    saved_with_monitor(pbroker)
    cfg = write_config(tmp_path / "c.toml", pbroker)
    a = feeders(cfg, count=30, interval=0.05, tag="a")
    a.wait_accepted(10)
    assert mon.wait_for(lambda: len(mon.on(TOPIC)) >= 10), a.log()
    pbroker.stop(signal.SIGTERM)
    a.wait_accepted(30)
    assert a.stop(signal.SIGTERM) == 0  # clean stop with the broker away: the spool keeps the rest
    assert "final(s) not yet acknowledged stay in" in a.log()
    b = feeders(cfg, count=15, interval=0.05, tag="b")
    b.wait_accepted(15)
    # Committed to the spool (the writer commits within milliseconds of accepting), not a 1 s sleep.
    assert wait_until(lambda: spooled(tmp_path / "spool.sqlite", b.accepted), timeout=5, step=0.05)
    b.stop(signal.SIGKILL)  # a crash while the broker is down
    c = feeders(cfg, count=5, interval=0.05, tag="c")
    c.wait_accepted(5)
    pbroker.start()
    expected = a.accepted + b.accepted + c.accepted
    assert mon.wait_for(lambda: len({m["seq"] for m in mon.json_on(TOPIC)}) >= len(expected), 30), c.log()
    stats = assert_all_finals_arrived(mon, expected, TOPIC)
    _report("daemon restarted twice while the broker was down", stats, len(expected))
    assert c.stop() == 0


def _netns_available() -> str | None:
    if os.geteuid() != 0:
        return "needs root for ip netns and iptables"
    for tool in ("ip", "iptables"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install iproute2 iptables)"
    probe = f"vxprobe{os.getpid() % 10000}"
    r = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if r.returncode != 0:
        return f"network namespaces unavailable: {r.stderr.strip()}"
    r = subprocess.run(["ip", "netns", "exec", probe, "iptables", "-L", "-n"], capture_output=True, text=True)
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    if r.returncode != 0:
        return f"iptables does not work in a network namespace: {r.stderr.strip()}"
    return None


@pytest.fixture
def netns():
    why = _netns_available()
    if why:
        pytest.skip(why)
    n = os.getpid() % 200 + 20
    name, veth = f"vxmq{n}", f"vxmq{n}"
    host_ip, ns_ip = f"10.231.{n}.1", f"10.231.{n}.2"

    def sh(*cmd):
        subprocess.run(cmd, check=True, capture_output=True)

    subprocess.run(["ip", "netns", "del", name], capture_output=True)
    sh("ip", "netns", "add", name)
    try:
        sh("ip", "link", "add", f"{veth}a", "type", "veth", "peer", "name", f"{veth}b")
        sh("ip", "link", "set", f"{veth}b", "netns", name)
        sh("ip", "addr", "add", f"{host_ip}/24", "dev", f"{veth}a")
        sh("ip", "link", "set", f"{veth}a", "up")
        sh("ip", "-n", name, "addr", "add", f"{ns_ip}/24", "dev", f"{veth}b")
        sh("ip", "-n", name, "link", "set", f"{veth}b", "up")
        sh("ip", "-n", name, "link", "set", "lo", "up")
        yield name, ns_ip
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)  # removes the veth pair too


def test_black_holed_broker(tmp_path, netns, monitor_for, feeders):
    name, ns_ip = netns
    b = Broker(tmp_path / "broker", host=ns_ip, netns=name, extra_port=True).start()
    try:
        mon = monitor_for(b, port=b.extra_port)  # the monitor's listener is not black-holed
        cfg = write_config(tmp_path / "c.toml", b, keepalive=5)
        f = feeders(cfg, count=150, interval=0.1, tag="hole")
        f.wait_accepted(20)
        rule = ["INPUT", "-p", "tcp", "--dport", str(b.port), "-j", "DROP"]
        subprocess.run(["ip", "netns", "exec", name, "iptables", "-A", *rule], check=True)
        try:
            end = time.monotonic() + 20
            while "lost the broker" not in f.log() and time.monotonic() < end:
                time.sleep(0.2)
            assert "lost the broker" in f.log(), "keep-alive did not notice the black hole"
            time.sleep(2)  # a sleep on purpose: the outage goes on 2 s after the daemon noticed it
        finally:
            subprocess.run(["ip", "netns", "exec", name, "iptables", "-D", *rule], check=True)
        f.wait_accepted(150)
        assert mon.wait_for(lambda: len({m["seq"] for m in mon.json_on(TOPIC)}) >= 150, 30), f.log()
        stats = assert_all_finals_arrived(mon, f.accepted, TOPIC)
        _report("black-holed broker", stats, len(f.accepted))
        assert f.stop() == 0
    finally:
        b.stop()
