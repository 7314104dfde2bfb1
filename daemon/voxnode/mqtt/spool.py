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
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from voxnode.mqtt.spool_faults import SpoolUnusable, cause_of, meta_value, salvage

log = logging.getLogger(__name__)

SPOOL_FILE = "mqtt-spool.sqlite"
REOPEN_S = 30.0  # a spool that could not be opened for writing is tried again this often (on append)


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
        except (sqlite3.Error, OSError, SpoolUnusable) as e:
            cause = cause_of(e, self.path)
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
            self._set_unwritable(cause_of(e, self.path))
            return
        self._set_writable()

    def _connect(self, path: Path) -> sqlite3.Connection:
        if path.is_dir():
            raise SpoolUnusable(
                "directory",
                f"MQTT spool {path} is a directory; set mqtt.spool_path to a file "
                "(e.g. /var/lib/voxnode/mqtt-spool.sqlite)",
            )
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise SpoolUnusable(
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
        assert db is not None  # callers open it first
        self._count = db.execute("SELECT count(*) FROM spool").fetchone()[0]
        self._last_seq = max(self._last_seq, self._high_water(db))
        self.dropped_total = meta_value(db, "dropped")

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
        db = self._db
        assert db is not None  # called right after a successful open
        with db:
            db.execute("BEGIN IMMEDIATE")
            db.execute(
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

    def _set_unwritable(self, cause: SpoolUnusable) -> None:
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

    def _recover(self, cause: SpoolUnusable) -> None:
        """Move the corrupt file aside, salvage its readable rows into a new spool, keep seq growing."""
        self._close_db()
        rows, high, dropped = salvage(self.path)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        try:
            for suffix in ("", "-wal", "-shm"):
                if os.path.lexists(f"{self.path}{suffix}"):
                    os.replace(f"{self.path}{suffix}", f"{aside}{suffix}")
        except OSError as e:
            self._set_unwritable(
                SpoolUnusable(
                    "corrupt",
                    f"{cause.message}; it cannot be moved aside ({e.strerror}): move {self.path} away by hand",
                )
            )
            return
        jumped = high is None
        if high is None:
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
        except (sqlite3.Error, OSError, SpoolUnusable) as e:
            self._close_db()
            self._set_unwritable(cause_of(e, self.path))
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
        cause = cause_of(e, self.path)
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
