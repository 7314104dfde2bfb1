"""Threads the OS knows by name: `top -H`, `ps -L` and /proc/PID/task/*/comm show "decode-0",
"capture-kitchen", "stream-kitchen", "turn-model", "mqtt-publisher" ... instead of "voxnode" for every
thread, so a board's CPU can be read per part of the daemon (Python 3.11 names only its Thread objects).

XNNPACK's worker threads are LiteRT's: they take the name of the thread that made their interpreter
(the main thread, "voxnode", for the speech model and the end-of-turn model).
"""

from __future__ import annotations

import ctypes
import sys
import threading

PR_SET_NAME = 15
NAME_BYTES = 15  # the kernel keeps 16 bytes, the last one a NUL


def set_os_name(name: str) -> None:
    """Name the calling OS thread (Linux; its first NAME_BYTES bytes); elsewhere, or if it fails, nothing."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None).prctl(PR_SET_NAME, name.encode(errors="replace")[:NAME_BYTES], 0, 0, 0)
    except (OSError, AttributeError):
        pass


class NamedThread(threading.Thread):
    """A threading.Thread whose OS thread carries its `name`."""

    def run(self) -> None:
        set_os_name(self.name)
        super().run()
