"""The spool when storage fails, in-process on real storage: a full tmpfs, a read-only remount, a corrupt
file, a directory in the way. The node keeps running in every case, says exactly what is wrong, and never
gives two finals the same seq (issue 11: [1,2,3,4,4,4,4,4,5,6,7] with a full disk)."""

from __future__ import annotations

import logging
import sqlite3
import time

from tests.reliability.spool_env import tmpfs  # noqa: F401
from voxnode.delivery.spool import Spool


def payload(seq: int) -> bytes:
    return f'{{"seq":{seq}}}'.encode() + b" " * 400


def store(spool: Spool, n: int) -> list[int | None]:
    return [spool.append("t", payload)[0] for _ in range(n)]


def test_full_disk_gives_no_seq_and_never_reuses_one(tmpfs, caplog):  # noqa: F811
    fs = tmpfs(512)
    s = Spool(fs.path / "spool.sqlite", 1000, clock=lambda: 0.0)
    assert s.writable and store(s, 3) == [1, 2, 3]
    filler = fs.fill()
    with caplog.at_level(logging.ERROR):
        during = store(s, 40)  # enough that the WAL needs new pages on the full disk
    assert during.count(None) >= 1, during
    stored = [x for x in during if x is not None]
    assert stored == list(range(4, 4 + len(stored))), during  # what did land got fresh seqs, in order
    assert not s.writable and "the disk is full" in s.error and str(fs.path) in s.error
    assert "move it aside" not in s.error and "corrupt" not in s.error
    assert caplog.text.count("the disk is full") == 1, caplog.text  # once per cause, not per final
    filler.unlink()
    after = store(s, 3)
    last = max(stored, default=3)
    assert after == [last + 1, last + 2, last + 3], (during, after)
    assert s.writable and s.error == ""
    seqs = [x for x in [1, 2, 3] + during + after if x is not None]
    assert len(seqs) == len(set(seqs)), "a seq was given twice"
    s.close()


def test_read_only_file_system_is_named_and_the_backlog_still_reads(tmpfs, caplog):  # noqa: F811
    fs = tmpfs(2048)
    path = fs.path / "spool.sqlite"
    s = Spool(path, 1000)
    store(s, 5)
    s.close()
    fs.remount("ro")
    with caplog.at_level(logging.WARNING):
        s = Spool(path, 1000, clock=lambda: 0.0)
    assert not s.writable
    assert s.error.startswith(f"spool {path}: {fs.path} is on a read-only file system"), s.error
    assert "delivered without a durable copy and without seq" in s.error
    assert "5 unsent final(s) it cannot remove once sent: they are sent again at every start" in caplog.text
    assert [m.seq for m in s.after("mqtt", 0, 10)] == [1, 2, 3, 4, 5]  # still delivered
    assert s.append("t", payload) == (None, [])
    s.ack("mqtt", [1])  # cannot delete: logged, kept
    assert s.count == 5
    s.close()


def test_directory_in_the_way_is_named_not_called_corrupt(tmp_path, caplog):
    path = tmp_path / "spool.sqlite"
    path.mkdir()
    with caplog.at_level(logging.ERROR):
        s = Spool(path, 1000)
    assert not s.writable
    assert s.error == (
        f"spool {path} is a directory; set delivery.spool_path to a file (e.g. /var/lib/voxnode/spool.sqlite)"
    )
    assert s.append("t", payload) == (None, [])
    assert "move it aside" not in caplog.text and "corrupt" not in caplog.text


def test_garbage_spool_is_moved_aside_and_seq_jumps_past_anything_used(tmp_path, caplog):
    path = tmp_path / "spool.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    t0_ms = int(time.time() * 1000)
    with caplog.at_level(logging.ERROR):
        s = Spool(path, 1000)  # before: SpoolError, the node stayed down until someone moved the file
    assert s.writable and s.error == ""
    aside = s.recovered_from
    assert aside is not None and aside.name.startswith("spool.sqlite.corrupt-")
    assert aside.read_bytes() == b"this is not a database" * 100  # kept for a post-mortem
    seq, _ = s.append("t", payload)
    assert seq > t0_ms  # the old high-water mark is unreadable: continue above anything it could have used
    line = next(r.getMessage() for r in caplog.records if "corrupt" in r.getMessage())
    assert line.startswith(
        f"spool {path} is corrupt (file is not a database): moved aside to {aside.name}; "
        "0 unsent final(s) salvaged into a new spool, seq jumps to "
    ), line
    s.close()


def test_damaged_spool_is_salvaged_and_seq_continues(tmp_path, caplog):
    path = tmp_path / "spool.sqlite"
    s = Spool(path, 100000)
    store(s, 400)  # ~50 leaf pages of 4 KB
    s.ack("mqtt", list(range(1, 101)))  # 100 delivered: seq 101..400 unsent
    s.close()
    page = 4096
    with sqlite3.connect(path) as db:
        root = db.execute("SELECT rootpage FROM sqlite_master WHERE name='spool'").fetchone()[0]
        pages = db.execute("PRAGMA page_count").fetchone()[0]
    # Overwrite one leaf page in the middle of the table with garbage (a bad SD card sector).
    victim = (pages + root) // 2
    with open(path, "r+b") as f:
        f.seek((victim - 1) * page)
        f.write(b"\xde\xad\xbe\xef" * (page // 4))
    with caplog.at_level(logging.ERROR):
        s = Spool(path, 100000)
    assert s.writable and s.recovered_from is not None
    kept = [m.seq for m in s.after("mqtt", 0, 1000)]
    assert 250 <= len(kept) < 300, len(kept)  # everything outside the damaged page
    assert kept == sorted(kept) and kept[0] == 101 and kept[-1] == 400
    assert s.append("t", payload)[0] == 401  # the high-water mark survived: seq continues, no jump
    assert f"{len(kept)} unsent final(s) salvaged into a new spool, seq continues at 401" in caplog.text
    assert s.dropped_total == 0
    s.close()
