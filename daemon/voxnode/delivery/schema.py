"""The spool's file: where it lives, its tables, and what a row is (voxnode.delivery.spool uses them)."""

from __future__ import annotations

import logging
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from voxnode.config.wording import toml_value
from voxnode.errors import ConfigError

log = logging.getLogger("voxnode.delivery.spool")

SPOOL_FILE = "spool.sqlite"
# The file's name before [delivery]: kept where it exists, so an upgraded node sends its unsent finals
# and continues its seq.
OLD_SPOOL_FILE = "mqtt-spool.sqlite"
# The only output a spool without a `pending` table was written for.
OLD_SPOOL_OUTPUT = "mqtt"
PENDING_TABLE = (
    "CREATE TABLE IF NOT EXISTS pending (output TEXT NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (output, seq))"
)


@dataclass(frozen=True)
class SpooledMessage:
    seq: int
    payload: bytes  # the final as JSON, with its seq and model


def default_spool_path() -> Path:
    """$STATE_DIRECTORY (systemd StateDirectory=), else /var/lib/voxnode, else a per-user folder."""
    state = os.environ.get("STATE_DIRECTORY", "").split(":")[0]
    candidates = [Path(state)] if state else []
    candidates.append(Path("/var/lib/voxnode"))
    for folder in candidates:
        if _writable_dir(folder):
            return folder / (OLD_SPOOL_FILE if (folder / OLD_SPOOL_FILE).exists() else SPOOL_FILE)
    user = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "voxnode"
    log.warning(
        "no writable state directory (%s); the spool goes to %s. Set delivery.spool_path or run under "
        "systemd with StateDirectory=voxnode",
        ", ".join(map(str, candidates)),
        user,
    )
    return user / SPOOL_FILE


def check_spool_path(configured: str) -> None:
    """A set `delivery.spool_path` the spool could never open: a folder, or a path under something that
    is not a folder (a file). A ConfigError naming the key, from check-config, a reload and run's start:
    a node configured to keep its finals durably must not run without (before: an ERROR in the log and
    every final without a durable copy or seq). What can change while the node runs (permissions, a full
    disk, a read-only mount, a folder made later) is the spool's to report in health and retry (spool.py)."""
    if not configured:
        return
    path = Path(configured)
    if configured.startswith("~"):
        # Not expanded: "~/x/spool.sqlite" made a folder named "~" in the current one.
        raise ConfigError(
            f'delivery.spool_path = {toml_value(configured)}: "~" is not expanded here; write the folder out '
            f"(e.g. {Path(configured).expanduser()})"
        )
    if os.path.exists(path) and not (os.path.isfile(path) or os.path.isdir(path)):
        # /dev/null passed, and every final went out without a durable copy or seq.
        raise ConfigError(f"delivery.spool_path = {toml_value(configured)}: {path} is not a regular file")
    if os.path.isdir(path):
        raise ConfigError(
            f"delivery.spool_path = {toml_value(configured)}: {path} is a folder; name the spool's file in it "
            f"(e.g. {path / SPOOL_FILE})"
        )
    for folder in path.parents:  # the nearest one that exists must be a folder (the spool makes the rest)
        if os.path.lexists(folder):
            if not os.path.isdir(folder):
                raise ConfigError(f"delivery.spool_path = {toml_value(configured)}: {folder} is not a folder")
            return


def _writable_dir(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK | os.X_OK)


def create_tables(db: sqlite3.Connection) -> None:
    """`spool` holds each final once; `pending` says which outputs still need it."""
    db.execute(
        "CREATE TABLE IF NOT EXISTS spool (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
        "topic TEXT NOT NULL, payload BLOB NOT NULL)"
    )
    db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)")
    if not has_table(db, "pending"):
        with db:
            db.execute("BEGIN IMMEDIATE")
            db.execute(PENDING_TABLE)
            # Written before outputs had cursors: its rows were MQTT's.
            db.execute("INSERT INTO pending (output, seq) SELECT ?, seq FROM spool", (OLD_SPOOL_OUTPUT,))


def has_table(db: sqlite3.Connection, name: str) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,)).fetchone() is not None


def high_water(db: sqlite3.Connection) -> int:
    """The highest seq ever assigned: delivered rows deleted leave it in sqlite_sequence."""
    return db.execute(
        "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name='spool'), 0), "
        "coalesce((SELECT max(seq) FROM spool), 0), "
        "coalesce((SELECT value FROM meta WHERE key='seq_floor'), 0))"
    ).fetchone()[0]


def file_bytes(path: Path) -> int:
    """The spool's size on disk: the file and its write-ahead log."""
    total = 0
    for suffix in ("", "-wal"):
        try:
            total += os.stat(f"{path}{suffix}").st_size
        except OSError:
            pass
    return total
