"""The C heap as glibc sees it, the Python allocator in use, malloc_trim, tracemalloc snapshots.

voxnode runs with PYTHONMALLOC=malloc so that Python objects live in glibc's
heap: mallinfo2 then accounts for all of them and malloc_trim(0) can hand
freed pages back (pymalloc arenas would hide both).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import sys
import time
import tracemalloc

log = logging.getLogger(__name__)

_FIELDS = ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")


class _MallInfo2(ctypes.Structure):  # glibc >= 2.33
    _fields_ = [(n, ctypes.c_size_t) for n in _FIELDS]


class _MallInfo(ctypes.Structure):  # older glibc (Jetson L4T on Ubuntu 20.04: 2.31); int fields wrap above 2 GiB
    _fields_ = [(n, ctypes.c_int) for n in _FIELDS]


def _load_libc():
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None


_libc = _load_libc()


def python_allocator() -> str:
    """'malloc', 'pymalloc', 'pymalloc_debug', ... : what PYTHONMALLOC selected."""
    try:
        import _testcapi  # Debian ships it separately; the venv's python has it

        return _testcapi.pymem_getallocatorsname()
    except (ImportError, RuntimeError, AttributeError):
        pass
    env = os.environ.get("PYTHONMALLOC", "")
    if env:
        return env
    return "pymalloc" if sys.flags.dev_mode is False else "pymalloc_debug"


class Heap:
    """mallinfo2 (or mallinfo) and malloc_trim, when the C library is glibc."""

    def __init__(self) -> None:
        self.kind = "none"
        self._fn = None
        if _libc is not None and hasattr(_libc, "mallinfo2"):
            self._fn = _libc.mallinfo2
            self._fn.restype = _MallInfo2
            self.kind = "mallinfo2"
        elif _libc is not None and hasattr(_libc, "mallinfo"):
            self._fn = _libc.mallinfo
            self._fn.restype = _MallInfo
            self.kind = "mallinfo"
        self._trim = getattr(_libc, "malloc_trim", None) if _libc is not None else None
        if self._trim is not None:
            self._trim.argtypes = [ctypes.c_size_t]
            self._trim.restype = ctypes.c_int
        self.trims = 0
        self.trimmed_bytes_total = 0
        self.last_trim_bytes = 0

    def info(self) -> dict | None:
        if self._fn is None:
            return None
        m = self._fn()
        mask = (1 << 32) - 1 if self.kind == "mallinfo" else None

        def val(name: str) -> int:
            v = getattr(m, name)
            return v & mask if mask else v

        return {
            "source": self.kind,
            "in_use_bytes": val("uordblks") + val("hblkhd"),  # small/medium chunks + mmapped large blocks
            "free_bytes": val("fordblks"),  # freed but still held by malloc (what a trim can return)
            "arena_bytes": val("arena"),
            "mmap_bytes": val("hblkhd"),
            "releasable_bytes": val("keepcost"),
        }

    def trim(self, rss_before: int, rss_after_fn) -> int:
        """malloc_trim(0); returns the bytes of RSS given back (measured, never negative)."""
        if self._trim is None:
            return 0
        self._trim(0)
        returned = max(0, rss_before - rss_after_fn())
        self.trims += 1
        self.trimmed_bytes_total += returned
        self.last_trim_bytes = returned
        return returned


class TraceSnapshots:
    """tracemalloc top allocations and growth since the previous snapshot (the `memory` command)."""

    def __init__(self) -> None:
        self._previous: tracemalloc.Snapshot | None = None
        self._previous_wall = 0.0

    def take(self, top: int = 15) -> dict:
        started_now = False
        if not tracemalloc.is_tracing():
            # Field debugging without a restart: start tracing now; growth shows from the next snapshot.
            tracemalloc.start(1)
            started_now = True
        snap = tracemalloc.take_snapshot().filter_traces(
            (
                tracemalloc.Filter(False, tracemalloc.__file__),
                tracemalloc.Filter(False, "<frozen importlib._bootstrap>"),
            )
        )
        current, peak = tracemalloc.get_traced_memory()
        stats = snap.statistics("lineno")
        result = {
            "tracing_started_now": started_now,
            "traced_bytes": current,
            "traced_peak_bytes": peak,
            "top": [_stat(s) for s in stats[:top]],
            "growth": None,
            "since_s": None,
        }
        if self._previous is not None:
            diff = snap.compare_to(self._previous, "lineno")
            diff = [d for d in diff if d.size_diff > 0][:top]
            result["growth"] = [_stat(d, diff=True) for d in diff]
            result["since_s"] = round(time.time() - self._previous_wall, 1)
        self._previous, self._previous_wall = snap, time.time()
        return result


def _stat(s, diff: bool = False) -> dict:
    frame = s.traceback[0]
    out = {"where": f"{frame.filename}:{frame.lineno}", "bytes": s.size, "count": s.count}
    if diff:
        out["bytes_diff"] = s.size_diff
        out["count_diff"] = s.count_diff
    return out


def traced_memory() -> dict | None:
    if not tracemalloc.is_tracing():
        return None
    current, peak = tracemalloc.get_traced_memory()
    return {"current_bytes": current, "peak_bytes": peak}
