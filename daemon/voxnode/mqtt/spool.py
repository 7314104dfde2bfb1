"""The durable spool: finals wait here, on disk, until the broker acknowledges them.

SQLite in WAL mode with synchronous=FULL: a row that `append` returned is on
the storage medium, so it survives a daemon crash and a power cut (Pis lose
power).

`seq` is assigned here, once, when a final is stored: one more than the highest
seq this spool ever held (rows are deleted on PUBACK, the high-water mark stays).
A final that cannot be stored (disk full, read-only file) gets no seq at all:
reusing one would make consumers drop a different transcript as a duplicate.

The spool never stops the node. A corrupt file is moved aside to
`<name>.corrupt-<UTC time>` with its readable rows salvaged into a new file; a
spool that cannot be written (full disk, read-only file or file system, a
directory in the way) is reported once per cause, in the log and in health
(`writable`, `error`), and retried: every append tries again, and a file that
could not be opened (or opened read-only) is reopened at most every REOPEN_S.

Two threads use it (the sequencer appends, the MQTT publisher reads and acks):
one lock serialises them; a write holds it for one fsync.
"""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable
from urllib.parse import quote

log = logging.getLogger(__name__)

SPOOL_FILE = "mqtt-spool.sqlite"
REOPEN_S = 30.0  # a spool that could not be opened for writing is tried again this often (on append)

# SQLite primary result codes (extended code & 0xff); Python 3.11 exposes them as sqlite_errorcode.
_PERM, _READONLY, _IOERR, _CORRUPT, _FULL, _CANTOPEN, _NOTADB = 3, 8, 10, 11, 13, 14, 26


@dataclass(frozen=True)
class SpooledMessage:
    seq: int
    topic: str
    payload: bytes


def default_spool_path() -> Path:
    """$STATE_DIRECTORY (systemd StateDirectory=), else /var/lib/voxnode, else a per-user folder."""
    state = os.environ.get("STATE_DIRECTORY", "").split(":")[0]
    candidates = [Path(state)] if state else []
    candidates.append(Path("/var/lib/voxnode"))
    for folder in candidates:
        if _writable_dir(folder):
            return folder / SPOOL_FILE
    user = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "voxnode"
    log.warning(
        "no writable state directory (%s); the MQTT spool goes to %s. Set mqtt.spool_path or run under "
        "systemd with StateDirectory=voxnode",
        ", ".join(map(str, candidates)),
        user,
    )
    return user / SPOOL_FILE


def _writable_dir(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK | os.X_OK)


class _Unusable(Exception):
    """The spool cannot be opened or written; the message says why and what to do."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind  # corrupt | full | readonly | directory | permission | io | other
        self.message = message


class Spool:
    def __init__(self, path: str | Path, max_messages: int, *, clock: Callable[[], float] = time.monotonic):
        self.path = Path(path)
        self.max_messages = max_messages
        self._clock = clock
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._count = 0
        self._last_seq = 0
        self.dropped_total = 0
        self.dropped_session = 0
        self.writable = False
        self.error = ""  # why finals cannot be stored now; "" when they can
        self.unstored = 0  # finals this session that got no durable copy (and no seq)
        self.recovered_from: Path | None = None  # where a corrupt spool was moved this session
        self._next_open = 0.0
        with self._lock:
            self._open()
        if self.error and self._db is not None and self._count:
            log.warning(
                "MQTT spool %s holds %d unsent final(s) it cannot remove once sent: they are sent again "
                "at every start until the spool is writable",
                self.path,
                self._count,
            )

    # ---- opening -----------------------------------------------------------------------------

    def _open(self) -> None:
        """(Re)open; on failure keep what can be read and record why. Caller holds the lock."""
        self._close_db()
        self._next_open = self._clock() + REOPEN_S
        try:
            self._db = self._connect(self.path)
            self._read_state()
        except (sqlite3.Error, OSError, _Unusable) as e:
            cause = self._cause(e)
            if cause.kind == "corrupt":
                self._recover(cause)
                return
            self._close_db()
            if cause.kind in ("readonly", "full"):
                self._open_for_reading()  # its unsent finals can still be read and sent
            self._set_unwritable(cause)
            return
        try:
            self._write_probe()
        except (sqlite3.Error, OSError) as e:
            self._set_unwritable(self._cause(e))
            return
        self._set_writable()

    def _connect(self, path: Path) -> sqlite3.Connection:
        if path.is_dir():
            raise _Unusable(
                "directory",
                f"MQTT spool {path} is a directory; set mqtt.spool_path to a file "
                "(e.g. /var/lib/voxnode/mqtt-spool.sqlite)",
            )
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise _Unusable(
                "permission",
                f"MQTT spool {path}: cannot create its folder {path.parent}: "
                f"{e.strerror or e}; set mqtt.spool_path or StateDirectory=",
            ) from None
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=5.0)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            db.execute(
                "CREATE TABLE IF NOT EXISTS spool (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
                "topic TEXT NOT NULL, payload BLOB NOT NULL)"
            )
            db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)")
        except BaseException:
            self._db = db  # a read-only file still has readable rows: the caller decides
            raise
        return db

    def _open_for_reading(self) -> None:
        """A spool that cannot be written may still hold unsent finals: open it read-only to send them.

        In WAL mode even reading needs the -shm file; on a read-only file system (or folder) without one,
        `immutable=1` reads the file as it is (nothing can change it there).
        """
        for options in ("mode=ro", "mode=ro&immutable=1"):
            try:
                db = sqlite3.connect(f"file:{quote(str(self.path))}?{options}", uri=True, check_same_thread=False)
            except sqlite3.Error:
                continue
            try:
                self._db = db
                self._read_state()
                return
            except sqlite3.Error:
                self._close_db()

    def _read_state(self) -> None:
        db = self._db
        self._count = db.execute("SELECT count(*) FROM spool").fetchone()[0]
        self._last_seq = max(self._last_seq, self._high_water(db))
        self.dropped_total = _meta(db, "dropped")

    @staticmethod
    def _high_water(db: sqlite3.Connection) -> int:
        """The highest seq ever assigned: rows deleted on PUBACK leave it in sqlite_sequence."""
        return db.execute(
            "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name='spool'), 0), "
            "coalesce((SELECT max(seq) FROM spool), 0), "
            "coalesce((SELECT value FROM meta WHERE key='seq_floor'), 0))"
        ).fetchone()[0]

    def _write_probe(self) -> None:
        # A read-only file opens and reads fine; find out at start, not at the first final.
        with self._db:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.execute(
                "INSERT INTO meta (key, value) VALUES ('opened', 1) ON CONFLICT(key) DO UPDATE SET value = value + 1"
            )

    def _set_writable(self) -> None:
        was = self.error
        self.writable, self.error = True, ""
        if was:
            log.warning(
                "MQTT spool %s is writable again: finals are stored durably again (%d got no seq meanwhile)",
                self.path,
                self.unstored,
            )

    def _set_unwritable(self, cause: _Unusable) -> None:
        self.writable = False
        if cause.message != self.error:
            log.error("%s", cause.message)
        self.error = cause.message

    def _close_db(self) -> None:
        if self._db is not None:
            try:
                self._db.close()
            except sqlite3.Error:
                pass
            self._db = None

    # ---- why it failed ----------------------------------------------------------------------

    def _cause(self, e: BaseException) -> _Unusable:
        if isinstance(e, _Unusable):
            return e
        path, folder = self.path, self.path.parent
        code = getattr(e, "sqlite_errorcode", 0) & 0xFF
        detail = str(e)
        if code in (_CORRUPT, _NOTADB):
            return _Unusable("corrupt", f"MQTT spool {path} is corrupt ({detail})")
        if code == _FULL or (isinstance(e, OSError) and e.errno == 28):
            try:
                free = f"{shutil.disk_usage(folder).free / 1e6:.1f} MB free"
            except OSError:
                free = "free space unknown"
            return _Unusable(
                "full",
                f"MQTT spool {path}: the disk is full ({free} on the file system of "
                f"{folder}); finals are published without a durable copy and without "
                "seq until space is freed",
            )
        if code in (_READONLY, _PERM) or (code == _CANTOPEN and path.exists()):
            return _Unusable(
                "readonly",
                f"MQTT spool {path}: {self._why_readonly()}; finals are published "
                "without a durable copy and without seq until it is writable",
            )
        if code == _CANTOPEN:
            return _Unusable(
                "permission",
                f"MQTT spool {path}: cannot create it ({self._why_readonly()}); "
                "set mqtt.spool_path to a writable place",
            )
        if code == _IOERR or isinstance(e, OSError):
            return _Unusable(
                "io",
                f"MQTT spool {path}: I/O error ({detail}); is the storage failing? Finals "
                "are published without a durable copy and without seq meanwhile",
            )
        return _Unusable(
            "other",
            f"MQTT spool {path}: {detail}; finals are published without a durable copy and without seq meanwhile",
        )

    def _why_readonly(self) -> str:
        path, folder = self.path, self.path.parent
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

    # ---- corruption ---------------------------------------------------------------------------

    def _recover(self, cause: _Unusable) -> None:
        """Move the corrupt file aside, salvage its readable rows into a new spool, keep seq growing."""
        self._close_db()
        rows, high, dropped = _salvage(self.path)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        try:
            for suffix in ("", "-wal", "-shm"):
                if os.path.lexists(f"{self.path}{suffix}"):
                    os.replace(f"{self.path}{suffix}", f"{aside}{suffix}")
        except OSError as e:
            self._set_unwritable(
                _Unusable(
                    "corrupt",
                    f"{cause.message}; it cannot be moved aside ({e.strerror}): move {self.path} away by hand",
                )
            )
            return
        jumped = high is None
        if jumped:
            # The old high-water mark is unreadable: continue far above anything it could have assigned
            # (milliseconds since 1970 outgrow any seq as long as fewer than 1000 finals a second were made).
            high = max([r[0] for r in rows] + [self._last_seq, int(time.time() * 1000)])
        high = max(high, self._last_seq)
        try:
            self._db = self._connect(self.path)
            with self._db:
                self._db.execute("BEGIN IMMEDIATE")
                self._db.executemany("INSERT INTO spool (seq, topic, payload) VALUES (?, ?, ?)", rows)
                self._db.execute("INSERT INTO meta (key, value) VALUES ('seq_floor', ?)", (high,))
                self._db.execute("INSERT INTO meta (key, value) VALUES ('dropped', ?)", (dropped,))
            self._read_state()
        except (sqlite3.Error, OSError, _Unusable) as e:
            self._close_db()
            self._set_unwritable(self._cause(e))
            return
        self.recovered_from = aside
        seq_note = (
            f"seq jumps to {high + 1} (the old high-water mark was unreadable)"
            if jumped
            else f"seq continues at {high + 1}"
        )
        log.error(
            "%s: moved aside to %s; %d unsent final(s) salvaged into a new spool, %s. Finals the damage "
            "made unreadable are lost",
            cause.message,
            aside.name,
            len(rows),
            seq_note,
        )
        self._set_writable()

    # ---- use ----------------------------------------------------------------------------------

    @property
    def count(self) -> int:
        return self._count

    @property
    def next_seq(self) -> int:
        return self._last_seq + 1

    def size_bytes(self) -> int:
        total = 0
        for suffix in ("", "-wal"):
            try:
                total += os.stat(f"{self.path}{suffix}").st_size
            except OSError:
                pass
        return total

    def append(self, topic: str, payload_for: Callable[[int], bytes]) -> tuple[int | None, list[int]]:
        """Store one final under the next seq (payload_for(seq) builds its payload).

        Returns (seq, seqs dropped to stay within the bound), or (None, []) when it could not be
        stored: that final has no seq, and the cause is in `error` (logged once per cause).
        """
        with self._lock:
            if not self.writable and self._clock() >= self._next_open:
                self._open()  # a fixed permission or a remount shows only on a new connection
            if self._db is None:
                self.unstored += 1
                return None, []
            seq = self._last_seq + 1
            dropped: list[int] = []
            try:
                with self._db:
                    self._db.execute("BEGIN IMMEDIATE")
                    self._db.execute(
                        "INSERT INTO spool (seq, topic, payload) VALUES (?, ?, ?)", (seq, topic, payload_for(seq))
                    )
                    excess = self._count + 1 - self.max_messages
                    if excess > 0:
                        dropped = [
                            r[0] for r in self._db.execute("SELECT seq FROM spool ORDER BY seq LIMIT ?", (excess,))
                        ]
                        self._db.executemany("DELETE FROM spool WHERE seq=?", [(s,) for s in dropped])
                        self._db.execute(
                            "INSERT INTO meta (key, value) VALUES ('dropped', ?) "
                            "ON CONFLICT(key) DO UPDATE SET value = value + excluded.value",
                            (len(dropped),),
                        )
            except (sqlite3.Error, OSError) as e:
                self.unstored += 1
                self._failed(e)
                return None, []
            self._last_seq = seq
            self._count += 1 - len(dropped)
            self.dropped_total += len(dropped)
            self.dropped_session += len(dropped)
            if not self.writable:
                self._set_writable()
            return seq, dropped

    def _failed(self, e: BaseException) -> None:
        """A write failed: record why; recover a corrupt file; resync seq in case the write did land."""
        cause = self._cause(e)
        if cause.kind == "corrupt":
            self._recover(cause)
            return
        self._set_unwritable(cause)
        if self._db is not None:
            try:
                self._last_seq = max(self._last_seq, self._high_water(self._db))
            except sqlite3.Error:
                pass

    def ack(self, seqs: list[int]) -> None:
        """The broker has them: forget them (one transaction for a batch of PUBACKs)."""
        if not seqs:
            return
        with self._lock:
            if self._db is None:
                return
            try:
                with self._db:
                    self._db.execute("BEGIN IMMEDIATE")
                    cur = self._db.executemany("DELETE FROM spool WHERE seq=?", [(s,) for s in seqs])
                    removed = cur.rowcount
            except (sqlite3.Error, OSError) as e:
                # They stay on disk and are sent again after a restart (same seq: consumers drop them).
                self._failed(e)
                return
            self._count -= max(0, removed)

    def after(self, seq: int, limit: int) -> list[SpooledMessage]:
        """Up to `limit` messages with seq > `seq`, oldest first."""
        with self._lock:
            if self._db is None:
                return []
            try:
                rows = self._db.execute(
                    "SELECT seq, topic, payload FROM spool WHERE seq > ? ORDER BY seq LIMIT ?", (seq, limit)
                ).fetchall()
            except (sqlite3.Error, OSError) as e:
                self._failed(e)
                return []
        return [SpooledMessage(s, t, bytes(p)) for s, t, p in rows]

    def get(self, seq: int) -> SpooledMessage | None:
        found = self.after(seq - 1, 1)
        return found[0] if found and found[0].seq == seq else None

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                try:
                    self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                except sqlite3.Error:
                    pass
            self._close_db()


def _meta(db: sqlite3.Connection, key: str) -> int:
    row = db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
    return row[0] if row else 0


def _salvage(path: Path) -> tuple[list[tuple[int, str, bytes]], int | None, int]:
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
            dropped = _meta(db, "dropped")
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
