"""The node's own record of the streams a user muted, so that a mute survives a restart.

A mute is a privacy choice: after a restart (a crash, an upgrade, a power cut) the stream must
still be muted. It is never rebuilt from the broker: a retained message on a command topic is
ignored, whoever left it (mqtt/command_runner.py), since anyone who may publish there could leave
a retained `unmute` as easily as a `mute`.

The record sits next to the spool (`spool.sqlite` -> `spool.mute.json`, or beside an older
`mqtt-spool.sqlite`, `mqtt-spool.mute.json`; i.e. in
$STATE_DIRECTORY under systemd), is rewritten atomically at every mute and unmute (a temporary file,
fsync, rename, fsync of the folder: a power cut leaves the old record or the new one, never half of
one) and read once at start, before any stream captures. A missing record means nothing is muted;
one that cannot be read mutes every stream (fail closed: a microphone muted by mistake is visible
in Home Assistant and one `unmute` away; one unmuted by mistake transcribes a room someone asked
not to be).
"""

from __future__ import annotations

import errno
import json
import logging
import os
import time
from pathlib import Path

from voxnode.events import iso8601
from voxnode.regular_file import read_regular_file_if_any

log = logging.getLogger("voxnode.mqtt")

# The record lists stream names (config STREAM_NAME_PATTERN: short); anything this long is not one.
MAX_RECORD_BYTES = 65536


class UnreadableRecord(Exception):
    """The record exists but cannot be read or is not a record (the message names the file)."""


def mute_record_path(spool_path: str | os.PathLike[str]) -> Path:
    spool = Path(spool_path)
    return spool.with_name(spool.stem + ".mute.json")


class MuteRecord:
    def __init__(self, path: Path):
        self.path = path
        self.muted: set[str] = set()  # what the record says, streams not configured now included

    def load(self) -> set[str]:
        """The muted streams as recorded; raises UnreadableRecord for a record that is there but bad.
        Read through voxnode.regular_file: a FIFO there must not hang the start."""
        data = read_regular_file_if_any(self.path, str(self.path), MAX_RECORD_BYTES, UnreadableRecord)
        if data is None:
            return set()
        try:
            doc = json.loads(data.decode("utf-8"))
        except (ValueError, RecursionError) as e:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
            raise UnreadableRecord(f"{self.path}: not a mute record ({type(e).__name__})") from None
        muted = doc.get("muted") if isinstance(doc, dict) else None
        if not isinstance(muted, list) or not all(isinstance(s, str) for s in muted):
            raise UnreadableRecord(f'{self.path}: not a mute record (no "muted" list of stream names)')
        self.muted = set(muted)
        return set(self.muted)

    def change(self, stream: str, muted: bool) -> str | None:
        """Record one change; None when it is on disk, else why not (one line, naming the file)."""
        # Kept in memory whatever the disk says: it is what is in force, and the next write carries it.
        self.muted = (self.muted | {stream}) if muted else (self.muted - {stream})
        return self._write(self.muted)

    def _write(self, muted: set[str]) -> str | None:
        body = json.dumps({"muted": sorted(muted), "updated": iso8601(time.time())}, indent=1).encode() + b"\n"
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
            try:
                os.write(fd, body)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, self.path)
            _fsync_dir(self.path.parent)
        except OSError as e:
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass
            why = e.strerror or errno.errorcode.get(e.errno or 0, str(e))
            return f"cannot write {self.path}: {why}"
        return None


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems refuse fsync on a directory; the rename itself is done
    finally:
        os.close(fd)
