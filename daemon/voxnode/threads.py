"""Threads the OS knows by name: `top -H`, `ps -L` and /proc/PID/task/*/comm show "decode-0",
"capture-kitchen", "stream-kitchen", "turn-model", "mqtt-publisher" ... instead of "voxnode" for every
thread, so a board's CPU can be read per part of the daemon (Python 3.11 names only its Thread objects).

XNNPACK's worker threads are LiteRT's, made while an interpreter allocates its tensors with the name of
the thread that made it; `name_new_threads` names them after the fact ("xnn-encoder", "xnn-decoder",
"xnn-turn": models/interpreter.py), through /proc/self/task/TID/comm, which a thread may write for
any thread of its own process.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

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


def _tasks() -> set[str]:
    try:
        return set(os.listdir("/proc/self/task"))
    except OSError:
        return set()


def _comm(tid: str) -> str | None:
    try:
        with open(f"/proc/self/task/{tid}/comm", encoding="utf-8", errors="replace") as f:
            return f.read().rstrip("\n")
    except OSError:
        return None


@contextmanager
def name_new_threads(name: str) -> Iterator[None]:
    """The threads a library makes for the caller inside the block (XNNPACK's pool) named `name` when
    it ends: only those new ones that still carry the calling thread's name, so a NamedThread that
    another thread started meanwhile keeps its own. Where /proc cannot be read or written, nothing."""
    before, mine = _tasks(), _comm(str(threading.get_native_id()))
    yield
    if mine is None:
        return
    for tid in _tasks() - before:
        if _comm(tid) == mine:
            try:
                with open(f"/proc/self/task/{tid}/comm", "w", encoding="utf-8") as f:
                    f.write(name.encode(errors="replace")[:NAME_BYTES].decode(errors="ignore"))
            except OSError:
                pass


class NamedThread(threading.Thread):
    """A threading.Thread whose OS thread carries its `name`."""

    def run(self) -> None:
        set_os_name(self.name)
        super().run()
