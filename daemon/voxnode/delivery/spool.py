"""The durable spool: finals wait here, on disk, until every durable output has delivered them.

SQLite in WAL mode with synchronous=FULL: a row that `append` returned is on
the storage medium, so it survives a daemon crash and a power cut (Pis lose
power).

`seq` is assigned here, once, when a final is stored: one more than the highest
seq this spool ever held (delivered rows are deleted, the high-water mark stays).
A final that cannot be stored (disk full, read-only file) gets no seq at all:
reusing one would make consumers drop a different transcript as a duplicate.

Each durable output (stdout, MQTT, webhook) reads and acknowledges through its own
`SpoolCursor`: a stored final is pending for every output the spool was opened with; its row
goes when the last of them has it. Finals pending for an output this run lacks stay, within the
bound, until it is back; an older spool's rows (no `pending` table) are MQTT's.

The spool never stops the node. A corrupt file is moved aside to
`<name>.corrupt-<UTC time>` with its readable rows salvaged into a new file; a
spool that cannot be written (full disk, read-only file or file system, a
directory in the way) is reported once per cause, in the log and in health
(`writable`, `error`), and retried: every append tries again, and a file that
could not be opened (or opened read-only) is reopened at most every REOPEN_S.

Threads use it (the sequencer appends, durable outputs read and ack) under one lock; a write holds
it for one fsync. One process per spool (delivery/owner.py).
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from voxnode.delivery.faults import SpoolUnusable, cause_of, meta_value, move_aside, refill, salvage, seq_floor
from voxnode.delivery.owner import SpoolOwner
from voxnode.delivery.schema import OLD_SPOOL_OUTPUT, SpooledMessage, create_tables, file_bytes, has_table, high_water

if TYPE_CHECKING:
    from voxnode.delivery.cursor import SpoolCursor

log = logging.getLogger(__name__)

REOPEN_S = 30.0  # a spool that could not be opened for writing is tried again this often (on append)


class Spool:
    def __init__(
        self,
        path: str | Path,
        max_messages: int,
        outputs: Sequence[str] = (OLD_SPOOL_OUTPUT,),
        *,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.path = Path(path)
        self.max_messages = max_messages
        self.outputs = tuple(outputs)  # each stored final is pending for each of these
        self._pending: dict[str, int] = {}  # output -> finals pending for it
        self._legacy = False  # opened read-only without a `pending` table: every row is MQTT's
        self._clock = clock
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._owner: SpoolOwner | None = None  # this process's hold on the file (delivery/owner.py)
        self._count = 0
        self._last_seq = 0
        self.dropped_total = 0
        self.dropped_session = 0
        self.writable = False
        self.error = ""  # why finals cannot be stored now; "" when they can
        self.unstored = 0  # finals this session that got no durable copy (and no seq)
        self.refused = 0  # finals the sequencer could not queue for the spool (its queue full, or stopping)
        self.recovered_from: Path | None = None  # where a corrupt spool was moved this session
        self._next_open = 0.0
        with self._lock:
            self._open()
        if self.error and self._db is not None and self._count:
            log.warning(
                "spool %s holds %d unsent final(s) it cannot remove once sent: they are sent again "
                "at every start until the spool is writable",
                self.path,
                self._count,
            )
        absent = {o: n for o, n in self._pending.items() if n and o not in self.outputs}
        for output, n in sorted(absent.items()):
            log.warning(
                "spool %s holds %d final(s) not yet delivered to output %s, which this config does not have: "
                "they wait for it (within delivery.spool_max_messages)",
                self.path,
                n,
                output,
            )

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
                f"spool {path} is a directory; set delivery.spool_path to a file (e.g. /var/lib/voxnode/spool.sqlite)",
            )
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise SpoolUnusable(
                "permission",
                f"spool {path}: cannot create its folder {path.parent}: "
                f"{e.strerror or e}; set delivery.spool_path or StateDirectory=",
            ) from None
        self._owner = self._owner or SpoolOwner(path)
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=5.0)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            create_tables(db)
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
        self._legacy = not has_table(db, "pending")
        if self._legacy:  # read-only, written before outputs had cursors
            self._pending = {OLD_SPOOL_OUTPUT: self._count}
        else:
            self._pending = dict(db.execute("SELECT output, count(*) FROM pending GROUP BY output").fetchall())
        self._last_seq = max(self._last_seq, high_water(db))
        self.dropped_total = meta_value(db, "dropped")

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
                "spool %s is writable again: finals are stored durably again (%d got no seq meanwhile)",
                self.path,
                self.unstored,
            )

    def _set_unwritable(self, cause: SpoolUnusable) -> None:
        was, self.error = self.error, cause.message  # first: a health report that sees writable False finds why
        self.writable = False
        if cause.message != was:
            log.error("%s", cause.message)

    def _close_db(self) -> None:
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            self._db = None

    def _recover(self, cause: SpoolUnusable) -> None:
        """Move the corrupt file aside, salvage its readable rows into a new spool, keep seq growing."""
        self._close_db()
        rows, high, dropped = salvage(self.path)
        try:
            aside = move_aside(self.path)
        except OSError as e:
            message = f"{cause.message}; it cannot be moved aside ({e.strerror}): move {self.path} away by hand"
            self._set_unwritable(SpoolUnusable("corrupt", message))
            return
        jumped = high is None
        high = seq_floor(rows, high, self._last_seq)
        try:
            self._db = self._connect(self.path)
            refill(self._db, rows, high, dropped, self.outputs)
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
        return file_bytes(self.path)

    def pending(self, output: str) -> int:
        """Finals not yet delivered to `output`."""
        return self._pending.get(output, 0)

    def cursor(self, output: str) -> SpoolCursor:
        from voxnode.delivery.cursor import SpoolCursor

        """What `output` reads and acknowledges; it must be one of `outputs`."""
        if output not in self.outputs:
            raise ValueError(f"output {output!r} is not one the spool was opened for ({', '.join(self.outputs)})")
        return SpoolCursor(self, output)

    def append(self, stream: str, payload_for: Callable[[int], bytes]) -> tuple[int | None, list[int]]:
        """Store one final of `stream` under the next seq (payload_for(seq) builds its payload),
        pending for every output.

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
                    # The `topic` column holds the stream (files written before [delivery]: the MQTT topic);
                    # outputs read the stream from the payload.
                    self._db.execute(
                        "INSERT INTO spool (seq, topic, payload) VALUES (?, ?, ?)", (seq, stream, payload_for(seq))
                    )
                    self._db.executemany(
                        "INSERT INTO pending (output, seq) VALUES (?, ?)", [(o, seq) for o in self.outputs]
                    )
                    excess = self._count + 1 - self.max_messages
                    dropped_from: dict[str, int] = {}
                    if excess > 0:
                        dropped = [
                            r[0] for r in self._db.execute("SELECT seq FROM spool ORDER BY seq LIMIT ?", (excess,))
                        ]
                        # The oldest rows: exactly those up to the last dropped seq.
                        dropped_from = dict(
                            self._db.execute(
                                "SELECT output, count(*) FROM pending WHERE seq <= ? GROUP BY output", (dropped[-1],)
                            ).fetchall()
                        )
                        self._db.execute("DELETE FROM pending WHERE seq <= ?", (dropped[-1],))
                        self._db.execute("DELETE FROM spool WHERE seq <= ?", (dropped[-1],))
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
            for output in self.outputs:
                self._pending[output] = self._pending.get(output, 0) + 1
            for output, n in dropped_from.items():
                self._pending[output] = self._pending.get(output, 0) - n
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
                self._last_seq = max(self._last_seq, high_water(self._db))
            except sqlite3.Error:
                pass

    def ack(self, output: str, seqs: list[int]) -> None:
        """`output` has delivered them: a row goes when no output still needs it (one transaction)."""
        if not seqs:
            return
        with self._lock:
            if self._db is None:
                return
            try:
                with self._db:
                    self._db.execute("BEGIN IMMEDIATE")
                    if self._legacy:  # read-only: this fails, and says why
                        self._db.executemany("DELETE FROM spool WHERE seq=?", [(s,) for s in seqs])
                    done = self._db.executemany(
                        "DELETE FROM pending WHERE output=? AND seq=?", [(output, s) for s in seqs]
                    ).rowcount
                    removed = self._db.executemany(
                        "DELETE FROM spool WHERE seq=? AND NOT EXISTS (SELECT 1 FROM pending WHERE pending.seq=?)",
                        [(s, s) for s in seqs],
                    ).rowcount
            except (sqlite3.Error, OSError) as e:
                # They stay on disk and are delivered again after a restart (same seq: consumers drop them).
                self._failed(e)
                return
            self._pending[output] = self._pending.get(output, 0) - max(0, done)
            self._count -= max(0, removed)

    def after(self, output: str, seq: int, limit: int) -> list[SpooledMessage]:
        """Up to `limit` finals pending for `output` with seq > `seq`, oldest first."""
        if self._legacy:
            if output != OLD_SPOOL_OUTPUT:
                return []
            query = "SELECT seq, payload FROM spool WHERE ? IS NOT NULL AND seq > ? ORDER BY seq LIMIT ?"
        else:
            query = (
                "SELECT spool.seq, payload FROM pending JOIN spool ON spool.seq = pending.seq "
                "WHERE output = ? AND pending.seq > ? ORDER BY pending.seq LIMIT ?"
            )
        with self._lock:
            if self._db is None:
                return []
            try:
                rows = self._db.execute(query, (output, seq, limit)).fetchall()
            except (sqlite3.Error, OSError) as e:
                self._failed(e)
                return []
        return [SpooledMessage(s, bytes(p)) for s, p in rows]

    def close(self) -> None:
        """Checkpoint and close the file. The spool owns no thread (its users do), so a plain close()."""
        with self._lock:
            if self._db is not None:
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._close_db()
            if self._owner is not None:
                self._owner.release()
