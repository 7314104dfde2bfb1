"""The durable spool on its own: order, persistence across reopen, seq never reused, drop-oldest counted."""

from __future__ import annotations

import logging
import os
import sqlite3

import pytest

from voxnode.delivery.schema import default_spool_path
from voxnode.delivery.spool import Spool


def test_order_ack_and_persistence(tmp_path):
    path = tmp_path / "s.sqlite"
    s = Spool(path, max_messages=100)
    for i in range(5):
        assert s.next_seq == i + 1
        assert s.append("t", lambda seq, i=i: f"m{i}".encode()) == (i + 1, [])
    s.ack("mqtt", [1, 2])
    assert [m.seq for m in s.after("mqtt", 0, 10)] == [3, 4, 5]
    assert [m.payload for m in s.after("mqtt", 3, 10)] == [b"m3", b"m4"]
    s.close()
    s = Spool(path, max_messages=100)  # a restart
    assert s.count == 3 and [m.seq for m in s.after("mqtt", 0, 10)] == [3, 4, 5]
    s.ack("mqtt", [3, 4, 5])
    s.close()
    s = Spool(path, max_messages=100)
    assert s.count == 0
    assert s.next_seq == 6, "seq must keep growing after the spool empties (consumers detect gaps with it)"
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_drop_oldest_is_counted_and_persisted(tmp_path):
    path = tmp_path / "s.sqlite"
    s = Spool(path, max_messages=10)
    dropped = []
    for _ in range(15):
        dropped += s.append("t", lambda seq: b"x")[1]
    assert dropped == [1, 2, 3, 4, 5]
    assert s.count == 10 and s.dropped_total == 5
    assert [m.seq for m in s.after("mqtt", 0, 100)] == list(range(6, 16))
    s.close()
    s = Spool(path, max_messages=10)
    assert s.dropped_total == 5 and s.dropped_session == 0


def test_default_path_prefers_state_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("STATE_DIRECTORY", str(tmp_path / "state"))
    assert default_spool_path() == tmp_path / "state" / "spool.sqlite"


def test_default_path_keeps_the_spool_an_older_version_left(tmp_path, monkeypatch):
    """Before [delivery] the file was mqtt-spool.sqlite: an upgraded node keeps its unsent finals and seq."""
    monkeypatch.setenv("STATE_DIRECTORY", str(tmp_path))
    old = Spool(tmp_path / "mqtt-spool.sqlite", 100)
    old.append("mic", lambda seq: b"x")
    old.close()
    assert default_spool_path() == tmp_path / "mqtt-spool.sqlite"


def test_default_path_falls_back_with_a_warning(tmp_path, monkeypatch, caplog):
    if os.geteuid() == 0:
        # root can write anywhere: stand in for an unwritable /var/lib with a path under a regular file
        blocker = tmp_path / "file"
        blocker.write_text("")
        monkeypatch.setenv("STATE_DIRECTORY", str(blocker / "state"))
        monkeypatch.setattr("voxnode.delivery.schema.Path", _NoVarLib)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    p = default_spool_path()
    assert p == _NoVarLib(tmp_path / "xdg" / "voxnode" / "spool.sqlite")
    assert "no writable state directory" in caplog.text and "delivery.spool_path" in caplog.text


class _NoVarLib(type(__import__("pathlib").Path())):
    """Path, except /var/lib/voxnode maps under a regular file (so it cannot be created)."""

    def __new__(cls, *args):
        if args and str(args[0]) == "/var/lib/voxnode":
            args = ("/dev/null/voxnode",)
        return super().__new__(cls, *args)


def test_a_final_stays_until_every_output_has_it(tmp_path):
    """Each durable output acknowledges through its own cursor; the row goes with the last one."""
    path = tmp_path / "spool.sqlite"
    s = Spool(path, 100, ("stdout", "mqtt", "webhook"))
    for i in range(3):
        s.append("mic", lambda seq, i=i: f"m{i}".encode())
    stdout, mqtt, webhook = (s.cursor(o) for o in ("stdout", "mqtt", "webhook"))
    stdout.ack([1, 2, 3])
    mqtt.ack([1, 2])
    assert (stdout.count, mqtt.count, webhook.count, s.count) == (0, 1, 3, 3)
    assert [m.seq for m in mqtt.after(0, 10)] == [3] and stdout.after(0, 10) == []
    webhook.ack([1, 2])
    assert s.count == 1  # seq 3: MQTT and the webhook still need it
    s.close()
    s = Spool(path, 100, ("stdout", "mqtt", "webhook"))  # a restart: each cursor is where it was
    assert [s.pending(o) for o in ("stdout", "mqtt", "webhook")] == [0, 1, 1]
    assert s.cursor("webhook").get(3).payload == b"m2"
    with pytest.raises(ValueError, match="not one the spool was opened for"):
        s.cursor("nope")


def test_finals_of_an_output_no_longer_configured_wait_for_it(tmp_path, caplog):
    path = tmp_path / "spool.sqlite"
    s = Spool(path, 100, ("stdout", "mqtt"))
    s.append("mic", lambda seq: b"a")
    s.cursor("stdout").ack([1])
    s.close()
    with caplog.at_level(logging.WARNING):
        s = Spool(path, 100, ("stdout",))  # MQTT taken out of the config
    assert "1 final(s) not yet delivered to output mqtt, which this config does not have" in caplog.text
    assert s.count == 1 and s.pending("mqtt") == 1
    s.append("mic", lambda seq: b"b")
    s.cursor("stdout").ack([2])
    assert s.count == 1  # seq 2 went with stdout's ack; seq 1 waits for MQTT
    s.close()
    s = Spool(path, 100, ("stdout", "mqtt"))
    assert [m.payload for m in s.cursor("mqtt").after(0, 10)] == [b"a"]


def test_a_spool_from_before_cursors_becomes_mqtt_s(tmp_path):
    """A file written before outputs had cursors (no `pending` table): its rows were MQTT's."""
    path = tmp_path / "mqtt-spool.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE spool (seq INTEGER PRIMARY KEY AUTOINCREMENT, topic TEXT NOT NULL, payload BLOB NOT NULL)")
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)")
    db.executemany(
        "INSERT INTO spool (seq, topic, payload) VALUES (?, 'voxnode/n/mic/transcript', ?)", [(7, b"a"), (8, b"b")]
    )
    db.commit()
    db.close()
    s = Spool(path, 100, ("stdout", "mqtt"))
    assert s.pending("mqtt") == 2 and s.pending("stdout") == 0
    assert [m.seq for m in s.cursor("mqtt").after(0, 10)] == [7, 8]
    assert s.append("mic", lambda seq: b"c")[0] == 9  # seq continues


def test_a_spool_held_by_another_process_is_not_written_and_taken_over_when_it_dies(tmp_path, caplog):
    """Two processes on one spool would hand out the same seq twice (`sudo voxnode run --stdout`
    beside the service: both default to /var/lib/voxnode). The second one runs without durable
    storage (no seq, none of the other's finals read or sent), says why naming the spool and the
    holder, and takes the spool over once the holder is gone (SIGKILL: the kernel drops its lock)."""
    import signal
    import subprocess
    import sys

    from voxnode.delivery.spool import REOPEN_S

    path = tmp_path / "s.sqlite"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from voxnode.delivery.spool import Spool; "
         f"s = Spool({str(path)!r}, 100); s.append('t', lambda q: b'theirs'); print('ready', flush=True); "
         "sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "ready"
        now = [0.0]
        with caplog.at_level(logging.ERROR):
            s = Spool(path, max_messages=100, clock=lambda: now[0])
        assert not s.writable
        assert f"spool {path} is in use by another voxnode process (pid {holder.pid})" in s.error
        assert "delivery.spool_path" in caplog.text
        assert s.append("t", lambda seq: b"mine") == (None, [])  # no seq: it could collide with theirs
        assert s.after("mqtt", 0, 10) == []  # theirs are theirs to send
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(5)
    now[0] += REOPEN_S
    assert s.append("t", lambda seq: b"mine") == (2, [])  # taken over: numbering goes on from theirs
    assert s.writable and [m.payload for m in s.after("mqtt", 0, 10)] == [b"theirs", b"mine"]
    s.close()
