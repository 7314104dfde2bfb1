"""`voxnode demo` with no broker configured starts its own Mosquitto and prints what the daemon publishes."""

from __future__ import annotations

import logging
import os
import re
import socket
import subprocess
import sys
import time

import pytest

from voxnode.config import Config
from voxnode.demo import mqtt_setup
from voxnode.errors import VoxnodeError
from voxnode.mqtt import localbroker


def test_demo_prints_mqtt_messages_from_a_local_broker(tmp_path, voxnode_cmd):
    cfg = tmp_path / "empty.toml"
    cfg.write_text("")  # [mqtt] off: the demo brings its own broker
    p = subprocess.run(
        [*voxnode_cmd, "demo", "--config", str(cfg)],
        capture_output=True,
        text=True,
        timeout=90,
        env={**os.environ, "PYTHONMALLOC": "malloc"},
    )
    assert p.returncode == 0, p.stderr
    lines = [line for line in p.stdout.splitlines() if line.startswith("mqtt: ")]
    topics = [line.split()[1] for line in lines]
    assert any(t.endswith("/status") for t in topics) and any(t.endswith("/health") for t in topics)
    assert any(t.startswith("homeassistant/device/") for t in topics)
    # The demo shows the first 400 characters of a payload; `state` comes first in the status JSON.
    status = [line.split(" ", 2)[2] for line in lines if line.split()[1].endswith("/status")]
    assert status[0].startswith('{"state":"online"') and status[-1].startswith('{"state":"offline"')
    assert "local Mosquitto on 127.0.0.1:" in p.stderr
    # the broker is gone afterwards: its port no longer accepts connections
    port = int(p.stderr.split("local Mosquitto on 127.0.0.1:")[1].split()[0])
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0


# A Mosquitto that never listens and leaves on SIGTERM only, writing its arguments down as it goes.
NEVER_LISTENS = """#!{python}
import os, signal, sys, time
def leave(*_):
    with open(os.environ["FAKE_MOSQUITTO_LEFT"], "w") as f:
        f.write(" ".join(sys.argv[1:]))
    sys.exit(0)
signal.signal(signal.SIGTERM, leave)
open(os.environ["FAKE_MOSQUITTO_LEFT"] + ".ready", "w").close()
while True:
    time.sleep(1)
"""


def test_a_local_broker_that_does_not_start_is_stopped_and_reaped(tmp_path, monkeypatch, caplog):
    """The demo's own Mosquitto that never opens its port: one warning line, and the process was asked
    to stop and given the time to (service.stop_timeout_s's default), then reaped. Before, the rollback
    had a deadline of now: SIGTERM and, at once, SIGKILL."""
    (tmp_path / "bin").mkdir()
    fake = tmp_path / "bin" / "mosquitto"
    fake.write_text(NEVER_LISTENS.format(python=sys.executable))
    fake.chmod(0o755)
    left = tmp_path / "left"
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_MOSQUITTO_LEFT", str(left))
    # The wait it gives up after: 2 s, not the 5 s a real one gets (it waited 5 s for nothing here). The
    # fake only has to be up by then to see its SIGTERM (a Python start: 10-20 ms here, load 1.5).
    monkeypatch.setattr(localbroker, "START_TIMEOUT_S", 2.0)
    made: list[localbroker.LocalBroker] = []
    real = localbroker.LocalBroker

    def make() -> localbroker.LocalBroker:
        made.append(real())
        return made[-1]

    monkeypatch.setattr(localbroker, "LocalBroker", make)
    config = Config()
    with caplog.at_level(logging.INFO):
        broker, same = mqtt_setup(config, tmp_path)
    assert broker is None and same is config
    (b,) = made
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        (
            "WARNING",
            f"demo: mosquitto did not start on 127.0.0.1:{b.port} in 2 s (config {b.work / 'mosquitto.conf'}): "
            "it wrote nothing",
        )
    ]
    assert left.with_suffix(".ready").exists()  # it had started: the stop found it running
    assert b.proc is not None and b.proc.returncode == 0, b.proc  # it left on SIGTERM (killed: -9)
    assert left.read_text() == f"-c {b.work / 'mosquitto.conf'}"
    assert not os.path.exists(f"/proc/{b.proc.pid}")  # reaped: not even a zombie
    assert not b.work.exists()


def test_a_local_broker_that_cannot_bind_fails_at_once_with_its_reason(monkeypatch):
    """A real Mosquitto whose port is taken (by a socket held here) exits at once: start() says so in
    one line with Mosquitto's own reason, the port and the config, without waiting its timeout. Before:
    the port answered (the socket held here), so start() took the broker for up and returned."""
    monkeypatch.setattr(localbroker, "START_TIMEOUT_S", 60.0)  # far longer than a failed start may take
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        b = localbroker.LocalBroker()
        b.port = held.getsockname()[1]
        t0 = time.monotonic()
        with pytest.raises(VoxnodeError) as e:
            b.start()
        took = time.monotonic() - t0
    assert re.fullmatch(
        re.escape("mosquitto exited (status ")
        + r"\d+"
        + re.escape(f") without listening on 127.0.0.1:{b.port} (config {b.work / 'mosquitto.conf'}): ")
        + re.escape("Error: Address already in use"),
        str(e.value),
    ), str(e.value)
    assert took < 30, took  # it exits in milliseconds; the timeout was 60 s
    assert b.proc is not None and b.proc.returncode not in (None, 0)
    assert not os.path.exists(f"/proc/{b.proc.pid}") and not b.work.exists()  # reaped, folder gone


def test_free_ports_lie_below_the_kernels_ephemeral_range():
    """A server restarted on its port after an outage (the tests' Mosquitto) must find it free: a port in
    the ephemeral range can be taken meanwhile as some connection's own end (CI: "Address already in use"
    after the 60 s outage). So free_port() picks below that range, and not always the same port."""
    from voxnode.mqtt.localbroker import EPHEMERAL_RANGE, free_port

    below = int(EPHEMERAL_RANGE.read_text().split()[0])
    ports = {free_port() for _ in range(20)}
    assert all(1024 <= p < below for p in ports) and len(ports) > 1
