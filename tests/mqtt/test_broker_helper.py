"""The tests' Mosquitto (tests/mqtt/broker.py) is up when it says so, as the demo's LocalBroker: a port
that answers is not enough (another program's socket answers too), and a broker that exits is seen at once."""

from __future__ import annotations

import socket
import time

import pytest

from tests.mqtt import broker as broker_module
from tests.mqtt.broker import Broker
from voxnode.mqtt import localbroker


def test_a_restarted_broker_whose_port_is_taken_fails_at_once_with_its_reason(tmp_path, monkeypatch):
    """Before: start() took the held socket's answer for the broker (and a restart's log still held the
    first run's lines), returned a Broker with no broker behind it, and the test using it failed later
    and elsewhere. Now: Mosquitto's own error, in one line, as soon as it exits."""
    monkeypatch.setattr(localbroker, "START_TIMEOUT_S", 60.0)  # far longer than a failed start may take
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        monkeypatch.setattr(broker_module, "free_port", lambda: port)
        b = Broker(tmp_path / "broker")
        held.close()  # the first run gets the port
        b.start()
        b.stop()
        with socket.socket() as again:  # a restart finds it taken
            again.bind(("127.0.0.1", port))
            again.listen()
            t0 = time.monotonic()
            with pytest.raises(RuntimeError) as e:
                b.start()
            took = time.monotonic() - t0
    assert f"without listening on 127.0.0.1:{port}" in str(e.value), e.value
    assert "Address already in use" in str(e.value), e.value
    assert took < 30, took  # its exit is seen, not the timeout waited out
    assert b.proc is None  # stopped and reaped
    assert b.log().count(" running") == 1  # the first run's line, which the restart did not count
