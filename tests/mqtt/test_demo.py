"""`voxnode demo` with no broker configured starts its own Mosquitto and prints what the daemon publishes."""

from __future__ import annotations

import os
import subprocess


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
    import socket

    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0
