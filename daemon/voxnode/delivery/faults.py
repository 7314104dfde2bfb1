"""Why a spool cannot be used (one kind, one message naming the cause and the fix), and what a
corrupt one still holds. `voxnode.delivery.spool` reports these and keeps the node running."""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from pathlib import Path

# SQLite primary result codes (extended code & 0xff); Python 3.11 exposes them as sqlite_errorcode.
_PERM, _READONLY, _IOERR, _CORRUPT, _FULL, _CANTOPEN, _NOTADB = 3, 8, 10, 11, 13, 14, 26


class SpoolUnusable(Exception):
    """The spool cannot be opened or written; the message says why and what to do."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind  # corrupt | full | readonly | directory | permission | io | in-use | other
        self.message = message


def cause_of(e: BaseException, path: Path) -> SpoolUnusable:
    """What went wrong, as one kind and one message that says what to do."""
    if isinstance(e, SpoolUnusable):
        return e
    folder = path.parent
    code = getattr(e, "sqlite_errorcode", 0) & 0xFF
    detail = str(e)
    if code in (_CORRUPT, _NOTADB):
        return SpoolUnusable("corrupt", f"spool {path} is corrupt ({detail})")
    if code == _FULL or (isinstance(e, OSError) and e.errno == 28):
        try:
            free = f"{shutil.disk_usage(folder).free / 1e6:.1f} MB free"
        except OSError:
            free = "free space unknown"
        return SpoolUnusable(
            "full",
            f"spool {path}: the disk is full ({free} on the file system of "
            f"{folder}); finals are delivered without a durable copy and without "
            "seq until space is freed",
        )
    if code in (_READONLY, _PERM) or (code == _CANTOPEN and path.exists()):
        return SpoolUnusable(
            "readonly",
            f"spool {path}: {why_readonly(path)}; finals are delivered "
            "without a durable copy and without seq until it is writable",
        )
    if code == _CANTOPEN:
        return SpoolUnusable(
            "permission",
            f"spool {path}: cannot create it ({why_readonly(path)}); set delivery.spool_path to a writable place",
        )
    if code == _IOERR or isinstance(e, OSError):
        return SpoolUnusable(
            "io",
            f"spool {path}: I/O error ({detail}); is the storage failing? Finals "
            "are delivered without a durable copy and without seq meanwhile",
        )
    return SpoolUnusable(
        "other",
        f"spool {path}: {detail}; finals are delivered without a durable copy and without seq meanwhile",
    )


def why_readonly(path: Path) -> str:
    """Why a spool that exists (or should) cannot be written, naming the user, mode or mount."""
    folder = path.parent
    user = _user_name()
    try:
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return f"{folder} is on a read-only file system"
    except OSError:
        pass
    if path.exists() and not os.access(path, os.W_OK):
        st = path.stat()
        return (
            f"the file is not writable by user {user} (mode {st.st_mode & 0o777:04o}, owner uid "
            f"{st.st_uid}); fix with chown/chmod"
        )
    if not os.access(folder, os.W_OK | os.X_OK):
        return (
            f"its folder {folder} is not writable by user {user} (SQLite creates {path.name}-wal and "
            f"{path.name}-shm next to it)"
        )
    for suffix in ("-wal", "-shm"):
        side = Path(f"{path}{suffix}")
        if side.exists() and not os.access(side, os.W_OK):
            return f"{side} is not writable by user {user}"
    return "it is read-only"


def meta_value(db: sqlite3.Connection, key: str) -> int:
    row = db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
    return row[0] if row else 0


def salvage(path: Path) -> tuple[list[tuple[int, str, bytes]], int | None, int]:
    """The readable rows of a corrupt spool, its high-water mark (None if unreadable), its dropped count.

    Rows are scanned upwards until the damage, then downwards from the end until the damage, which
    recovers everything outside one damaged stretch.
    """
    rows: dict[int, tuple[int, str, bytes]] = {}
    high = None
    dropped = 0
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error:
        return [], None, 0
    try:
        for order in ("ASC", "DESC"):
            try:
                for s, t, p in db.execute(f"SELECT seq, topic, payload FROM spool ORDER BY seq {order}"):
                    if isinstance(s, int) and isinstance(t, str) and isinstance(p, (bytes, str)):
                        rows[s] = (s, t, bytes(p) if isinstance(p, bytes) else p.encode())
            except sqlite3.Error:
                pass
        try:
            row = db.execute("SELECT seq FROM sqlite_sequence WHERE name='spool'").fetchone()
            high = int(row[0]) if row else None
            floor = db.execute("SELECT value FROM meta WHERE key='seq_floor'").fetchone()
            if floor and high is not None:
                high = max(high, int(floor[0]))
        except (sqlite3.Error, TypeError, ValueError):
            high = None
        try:
            dropped = meta_value(db, "dropped")
        except sqlite3.Error:
            pass
    finally:
        db.close()
    if high is not None and rows:
        high = max(high, max(rows))
    return sorted(rows.values()), high, dropped


def _user_name() -> str:
    try:
        import pwd

        return pwd.getpwuid(os.geteuid()).pw_name
    except (ImportError, KeyError):
        return str(os.geteuid())


def move_aside(path: Path) -> Path:
    """Rename a corrupt spool (and its -wal, -shm) to <name>.corrupt-<UTC time>; raises OSError."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    aside = path.with_name(f"{path.name}.corrupt-{stamp}")
    for suffix in ("", "-wal", "-shm"):
        if os.path.lexists(f"{path}{suffix}"):
            os.replace(f"{path}{suffix}", f"{aside}{suffix}")
    return aside


def seq_floor(rows: list[tuple[int, str, bytes]], high: int | None, last_seq: int) -> int:
    """Where seq continues after a salvage."""
    if high is None:
        # The old high-water mark is unreadable: continue far above anything it could have assigned
        # (milliseconds since 1970 outgrow any seq as long as fewer than 1000 finals a second were made).
        high = max([r[0] for r in rows] + [last_seq, int(time.time() * 1000)])
    return max(high, last_seq)


def refill(db: sqlite3.Connection, rows: list[tuple[int, str, bytes]], high: int, dropped: int, outputs) -> None:
    """The salvaged rows into a new spool. Which outputs still lacked them is lost with the damage:
    every output gets them (a final may reach one twice, with the same seq; none is lost)."""
    with db:
        db.execute("BEGIN IMMEDIATE")
        db.executemany("INSERT INTO spool (seq, topic, payload) VALUES (?, ?, ?)", rows)
        db.executemany("INSERT INTO pending (output, seq) VALUES (?, ?)", [(o, r[0]) for r in rows for o in outputs])
        db.execute("INSERT INTO meta (key, value) VALUES ('seq_floor', ?)", (high,))
        db.execute("INSERT INTO meta (key, value) VALUES ('dropped', ?)", (dropped,))
