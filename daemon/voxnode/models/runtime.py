"""Which TFLite interpreter we run on, and whether XNNPACK took the whole graph.

ai-edge-litert is the supported runtime; tflite_runtime is accepted as a
fallback for boards where only that wheel exists (it rejects models from
recent converters, so the fallback is logged).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

from voxnode.errors import ModelError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Runtime:
    name: str
    version: str
    interpreter_class: type


def load_runtime() -> Runtime:
    try:
        from ai_edge_litert.interpreter import Interpreter

        return Runtime("ai-edge-litert", _dist_version("ai-edge-litert"), Interpreter)
    except ImportError as first:
        try:
            from tflite_runtime.interpreter import Interpreter  # type: ignore[import-not-found]
        except ImportError:
            raise ModelError(f"no TFLite runtime: install ai-edge-litert (import failed: {first})") from None
        log.warning("ai-edge-litert is not importable (%s); falling back to tflite_runtime", first)
        return Runtime("tflite-runtime", _dist_version("tflite-runtime"), Interpreter)


def _dist_version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "unknown"


def physical_cores() -> int:
    """Physical cores this process may use (SMT siblings count once)."""
    try:
        cpus = os.sched_getaffinity(0)
    except AttributeError:
        cpus = set(range(os.cpu_count() or 1))
    cores: set[tuple[str, str | int]] = set()
    for cpu in cpus:
        try:
            with open(f"/sys/devices/system/cpu/cpu{cpu}/topology/core_id") as f:
                core = f.read().strip()
            with open(f"/sys/devices/system/cpu/cpu{cpu}/topology/physical_package_id") as f:
                package = f.read().strip()
            cores.add((package, core))
        except OSError:
            cores.add(("?", cpu))
    return max(1, len(cores))


# Beyond this many threads the small graphs of Whisper tiny/base gain nothing (XNNPACK splits each
# product into fewer rows than threads).
MAX_DEFAULT_THREADS = 4


def default_num_threads(cores: int | None = None) -> int:
    """Half the physical cores (`cores`, default this machine's), 1 to MAX_DEFAULT_THREADS.

    The other half stays free for capture, VAD, the end-of-turn model and MQTT. Measured on an
    emulated Pi 4 (scripts/bench/emulate_board.py pi4, scripts/bench/drafts.py, 15 real utterances, a
    final right after a partial, beam 3 with its draft): median final 944 ms on 1 thread, 530 on 2,
    543 on 4 (greedy with the draft 571 / 321 / 377): the 4 cores' default stays 2 threads, and
    live a second thread took end of speech -> final from p50 549 / p95 1272 ms to 508 / 938.
    """
    n = physical_cores() if cores is None else cores
    return max(1, min(MAX_DEFAULT_THREADS, n // 2))


@dataclass(frozen=True)
class Delegation:
    applied: bool
    ops_total: int
    not_delegated: tuple[str, ...]  # op names left to the builtin kernels


def delegation(interpreter) -> Delegation:
    """Which of the model's ops the delegate took, read from the graph after delegation.

    Delegate nodes are appended after the model's own nodes. Walking back from
    each delegate node's outputs to its inputs marks the nodes it replaced; any
    other original node still runs on the builtin kernels.
    """
    ops = interpreter._get_ops_details()
    original = [op for op in ops if op["op_name"] != "DELEGATE"]
    delegates = [op for op in ops if op["op_name"] == "DELEGATE"]
    producer = {}
    for op in original:
        for t in op["outputs"]:
            producer[int(t)] = op["index"]
    by_index = {op["index"]: op for op in original}
    covered: set[int] = set()
    for d in delegates:
        boundary = {int(t) for t in d["inputs"]}
        stack = [int(t) for t in d["outputs"]]
        while stack:
            t = stack.pop()
            if t in boundary or t not in producer:
                continue
            node = producer[t]
            if node in covered:
                continue
            covered.add(node)
            stack.extend(int(i) for i in by_index[node]["inputs"] if i >= 0)
    left = tuple(op["op_name"] for op in original if op["index"] not in covered)
    return Delegation(applied=bool(delegates), ops_total=len(original), not_delegated=left)


MADV_DONTNEED = 4


def release_file_pages(path) -> int:
    """Drop this process's resident pages of a memory-mapped model file; returns bytes advised.

    The interpreter maps the .tflite file read-only and XNNPACK copies every
    weight into its own packed buffers while the delegate is built, so the
    mapped pages are dead weight afterwards (some 38 MB for the int8 model).
    MADV_DONTNEED on a read-only file mapping only unmaps the pages: a later
    read (the decoder's embedding rows) faults them back in from the page
    cache with identical contents. Best effort: on failure nothing changes.
    """
    import ctypes

    target = str(Path(path).resolve())
    ranges = []
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                parts = line.split(maxsplit=5)
                if len(parts) == 6 and parts[5].strip() == target and "w" not in parts[1]:
                    start, end = (int(x, 16) for x in parts[0].split("-"))
                    ranges.append((start, end - start))
        libc = ctypes.CDLL(None, use_errno=True)
        libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    except (OSError, AttributeError):
        return 0
    released = 0
    for start, length in ranges:
        if libc.madvise(ctypes.c_void_p(start), ctypes.c_size_t(length), MADV_DONTNEED) == 0:
            released += length
    return released


def mapped_file_offset(address: int) -> tuple[str, int] | None:
    """(file, offset in it) of a file-backed mapping that holds `address`, else None."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                parts = line.split(maxsplit=5)
                if len(parts) < 6 or not parts[5].strip().startswith("/"):
                    continue
                start, end = (int(x, 16) for x in parts[0].split("-"))
                if start <= address < end:
                    return parts[5].strip(), int(parts[2], 16) + address - start
    except OSError:
        pass
    return None
