"""The durable spool on its own: order, persistence across reopen, seq never reused, drop-oldest counted."""

from __future__ import annotations

import os
import sqlite3

from voxnode.mqtt.spool import Spool, default_spool_path


def test_order_ack_and_persistence(tmp_path):
    path = tmp_path / "s.sqlite"
    s = Spool(path, max_messages=100)
    for i in range(5):
        assert s.next_seq == i + 1
        assert s.append("t", lambda seq, i=i: f"m{i}".encode()) == (i + 1, [])
    s.ack([1, 2])
    assert [m.seq for m in s.after(0, 10)] == [3, 4, 5]
    assert [m.payload for m in s.after(3, 10)] == [b"m3", b"m4"]
    s.close()
    s = Spool(path, max_messages=100)  # a restart
    assert s.count == 3 and [m.seq for m in s.after(0, 10)] == [3, 4, 5]
    s.ack([3, 4, 5])
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
    assert [m.seq for m in s.after(0, 100)] == list(range(6, 16))
    s.close()
    s = Spool(path, max_messages=10)
    assert s.dropped_total == 5 and s.dropped_session == 0


def test_default_path_prefers_state_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("STATE_DIRECTORY", str(tmp_path / "state"))
    assert default_spool_path() == tmp_path / "state" / "mqtt-spool.sqlite"


def test_default_path_falls_back_with_a_warning(tmp_path, monkeypatch, caplog):
    if os.geteuid() == 0:
        # root can write anywhere: stand in for an unwritable /var/lib with a path under a regular file
        blocker = tmp_path / "file"
        blocker.write_text("")
        monkeypatch.setenv("STATE_DIRECTORY", str(blocker / "state"))
        monkeypatch.setattr("voxnode.mqtt.spool.Path", _NoVarLib)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    p = default_spool_path()
    assert p == _NoVarLib(tmp_path / "xdg" / "voxnode" / "mqtt-spool.sqlite")
    assert "no writable state directory" in caplog.text and "mqtt.spool_path" in caplog.text


class _NoVarLib(type(__import__("pathlib").Path())):
    """Path, except /var/lib/voxnode maps under a regular file (so it cannot be created)."""

    def __new__(cls, *args):
        if args and str(args[0]) == "/var/lib/voxnode":
            args = ("/dev/null/voxnode",)
        return super().__new__(cls, *args)
