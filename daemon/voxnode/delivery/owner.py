"""One voxnode process per spool: an advisory lock beside the file.

Two processes writing one spool would each number finals from the high-water mark they read and
hand out the same `seq` twice (consumers then drop a real transcript as a duplicate). Since stdout
alone is durable too, `sudo voxnode run --stdout` beside the running service would do exactly that:
both default to /var/lib/voxnode. The second process finds the spool held and runs as with a spool
it cannot write (finals published without a seq, health and the log say why), and takes the spool
over when the first lets go (the kernel drops a flock when its process dies, SIGKILL included).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from voxnode.delivery.faults import SpoolUnusable


class SpoolOwner:
    """Holds `<spool>.lock` (flock) from construction until release()."""

    def __init__(self, spool: Path):
        self.path = spool.with_name(spool.name + ".lock")
        self._fd = -1
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError:
            try:  # another user's lock file (root left it): flock needs no write access
                fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                return  # neither: this process cannot write beside the spool, nor so the spool itself
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            os.close(fd)
            raise SpoolUnusable(
                "in-use",
                f"spool {spool} is in use by another voxnode process"
                + (f" (pid {holder})" if holder.isdigit() else "")
                + "; set delivery.spool_path to another file for this one",
            ) from None
        self._fd = fd
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError:
            pass  # held read-only: the lock holds all the same, only the holder's pid is not shown

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)  # closing the descriptor drops the lock
            self._fd = -1
