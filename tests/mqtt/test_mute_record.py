"""The node's own mute record (mqtt/mute_record.py) on a real filesystem: written atomically, read at
start, and a record that cannot be read mutes every stream (fail closed) without hanging the start."""

from __future__ import annotations

import json
import logging
import os
import threading

from voxnode.config import Config
from voxnode.mqtt.command_runner import CommandRunner
from voxnode.mqtt.mute_record import MuteRecord, mute_record_path
from voxnode.mqtt.topics import Topics
from voxnode.standin import StandInDaemon


def runner(path, published=None) -> CommandRunner:
    cfg = Config()
    return CommandRunner(
        Topics.from_config(cfg.mqtt),
        4096,
        publisher=None,  # type: ignore[arg-type]  (nothing here publishes)
        reporter=type("R", (), {"request": lambda self: None})(),  # type: ignore[arg-type]
        record=MuteRecord(path),
        publish_mute_state=lambda s, m: (published if published is not None else []).append((s, m)),
    )


def test_record_path_sits_next_to_the_spool():
    assert str(mute_record_path("/var/lib/voxnode/mqtt-spool.sqlite")) == "/var/lib/voxnode/mqtt-spool.mute.json"


def test_mute_is_recorded_atomically_and_restored(tmp_path):
    path = tmp_path / "mqtt-spool.mute.json"
    r = runner(path)
    daemon = StandInDaemon(Config())
    r._set_muted(daemon, "mic", True)
    assert json.loads(path.read_text())["muted"] == ["mic"]
    assert sorted(os.listdir(tmp_path)) == [path.name]  # no temporary file left behind
    restarted = StandInDaemon(Config())
    runner(path).restore_mutes(restarted)
    assert restarted.is_muted("mic")
    r._set_muted(daemon, "mic", False)
    again = StandInDaemon(Config())
    runner(path).restore_mutes(again)
    assert not again.is_muted("mic") and json.loads(path.read_text())["muted"] == []


def test_no_record_mutes_nothing(tmp_path):
    daemon = StandInDaemon(Config())
    runner(tmp_path / "none.mute.json").restore_mutes(daemon)
    assert not daemon.is_muted("mic")


def test_an_unreadable_record_mutes_every_stream_with_one_line(tmp_path, caplog):
    bad = {  # how to make it, and why it is refused
        "garbage": (lambda p: p.write_bytes(b"\xff{not json"), ": not a mute record (UnicodeDecodeError)"),
        "wrong": (lambda p: p.write_text('{"muted": "mic"}'), ': not a mute record (no "muted" list'),
        "deep": (lambda p: p.write_text("[" * 5000 + "]" * 5000), ": not a mute record (RecursionError)"),
        # The config file's guard (voxnode.regular_file) reads it, in its words.
        "dir": (lambda p: p.mkdir(), " is a directory"),
        "fifo": (os.mkfifo, " is a FIFO (named pipe), not a regular file"),  # opened blocking: a hang for good
        "huge": (lambda p: p.write_bytes(b" " * 70000), " is larger than 64 KiB; is it the right file?"),
    }
    for name, (make, why) in bad.items():
        path = tmp_path / f"{name}.mute.json"
        make(path)
        daemon = StandInDaemon(Config())
        caplog.clear()
        done = threading.Event()
        t = threading.Thread(target=lambda d=daemon, p=path, e=done: (runner(p).restore_mutes(d), e.set()), daemon=True)
        with caplog.at_level(logging.INFO, logger="voxnode.mqtt"):
            t.start()
            assert done.wait(10), f"{name}: restore_mutes hung"
        assert daemon.is_muted("mic"), name
        errors = [r for r in caplog.records if r.levelno == logging.ERROR]
        assert len(errors) == 1 and str(path) in errors[0].getMessage(), (name, caplog.text)
        assert f"cannot read the mute record ({path}{why}" in caplog.text, caplog.text
        assert not any(r.exc_info for r in caplog.records)


def test_a_record_that_cannot_be_written_is_said_and_the_mute_still_holds(tmp_path, caplog):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    path = blocker / "mqtt-spool.mute.json"  # its "folder" is a file: every write fails
    published: list = []
    daemon = StandInDaemon(Config())
    with caplog.at_level(logging.INFO, logger="voxnode.mqtt"):
        runner(path, published)._set_muted(daemon, "mic", True)
    assert daemon.is_muted("mic") and published == [("mic", True)]
    line = next(r.getMessage() for r in caplog.records if r.levelno == logging.ERROR)
    assert "restart" in line and str(path) in line and "Not a directory" in line
