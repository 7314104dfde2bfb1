"""The durable spool: finals wait here, on disk, until the broker acknowledges them.

SQLite in WAL mode with synchronous=FULL: a row that `append` returned is on
the storage medium, so it survives a daemon crash and a power cut (Pis lose
power). One thread owns the connection (the MQTT publisher thread); nothing
here is thread-safe on purpose.

`seq` is the row id. AUTOINCREMENT never reuses ids, even after the rows are
deleted, so seq grows across restarts and a consumer can spot gaps.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from voxnode.errors import SpoolError

log = logging.getLogger(__name__)

SPOOL_FILE = "mqtt-spool.sqlite"


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
    def __init__(self, path: str | Path, max_messages: int):
        self.path = Path(path)
        self.max_messages = max_messages
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS spool (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
                "topic TEXT NOT NULL, payload BLOB NOT NULL)"
            )
            self._db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)")
            self._count = self._db.execute("SELECT count(*) FROM spool").fetchone()[0]
            self._last_seq = self._db.execute(
                "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name='spool'), 0), "
                "coalesce((SELECT max(seq) FROM spool), 0))"
            ).fetchone()[0]
            self.dropped_total = self._meta("dropped")
        except sqlite3.DatabaseError as e:
            raise SpoolError(
                f"MQTT spool {self.path}: {e}. If the file is corrupt, move it aside (its unsent transcripts are "
                "lost) or set mqtt.spool_path"
            ) from None
        except OSError as e:
            raise SpoolError(
                f"MQTT spool {self.path}: {e.strerror or e}; set mqtt.spool_path to a writable file"
            ) from None
        self.dropped_session = 0

    def _meta(self, key: str) -> int:
        row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else 0

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
            except FileNotFoundError:
                pass
        return total

    def append(self, seq: int, topic: str, payload: bytes) -> list[int]:
        """Store one message under `seq` (from `next_seq`). Returns the seqs dropped to stay in bounds."""
        dropped: list[int] = []
        try:
            with self._db:
                self._db.execute("BEGIN IMMEDIATE")
                self._db.execute("INSERT INTO spool (seq, topic, payload) VALUES (?, ?, ?)", (seq, topic, payload))
                excess = self._count + 1 - self.max_messages
                if excess > 0:
                    dropped = [r[0] for r in self._db.execute("SELECT seq FROM spool ORDER BY seq LIMIT ?", (excess,))]
                    self._db.executemany("DELETE FROM spool WHERE seq=?", [(s,) for s in dropped])
                    self._db.execute(
                        "INSERT INTO meta (key, value) VALUES ('dropped', ?) "
                        "ON CONFLICT(key) DO UPDATE SET value = value + excluded.value",
                        (len(dropped),),
                    )
        except sqlite3.Error as e:
            raise SpoolError(f"MQTT spool {self.path}: cannot store a transcript: {e}") from None
        self._last_seq = max(self._last_seq, seq)
        self._count += 1 - len(dropped)
        self.dropped_total += len(dropped)
        self.dropped_session += len(dropped)
        return dropped

    def ack(self, seqs: list[int]) -> None:
        """The broker has them: forget them (one transaction for a batch of PUBACKs)."""
        if not seqs:
            return
        try:
            with self._db:
                self._db.execute("BEGIN IMMEDIATE")
                cur = self._db.executemany("DELETE FROM spool WHERE seq=?", [(s,) for s in seqs])
                removed = cur.rowcount
        except sqlite3.Error as e:
            raise SpoolError(f"MQTT spool {self.path}: cannot remove acknowledged transcripts: {e}") from None
        self._count -= max(0, removed)

    def after(self, seq: int, limit: int) -> list[SpooledMessage]:
        """Up to `limit` messages with seq > `seq`, oldest first."""
        rows = self._db.execute(
            "SELECT seq, topic, payload FROM spool WHERE seq > ? ORDER BY seq LIMIT ?", (seq, limit)
        ).fetchall()
        return [SpooledMessage(s, t, bytes(p)) for s, t, p in rows]

    def close(self) -> None:
        try:
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error:
            pass
        self._db.close()
