"""Which TFLite interpreter we run on, and whether XNNPACK took the whole graph.

ai-edge-litert is the supported runtime; tflite_runtime is accepted as a
fallback for boards where only that wheel exists (it rejects models from
recent converters, so the fallback is logged).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
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


def default_num_threads(cores: int | None = None, engines: int = 1) -> int:
    """Inference threads per engine: the physical cores (`cores`, default this machine's) shared by
    `engines` engine instances ([stream] decode_workers), 1 to MAX_DEFAULT_THREADS; a machine with
    fewer than 4 cores keeps one core free for capture, VAD, the end-of-turn model and MQTT.

    Measured live (scripts/bench/live_noise.py, 25 real utterances, clean and pink 10 dB, sentences
    p50 / p95 ms, stop 39's quiet Xeon with its own fractions, two runs each, back to back;
    docs/benchmarks.md "Four inference threads"): an emulated Pi 4 on 2 threads 602-619 / 1090-1141
    clean, 501-577 / 797-820 pink; on 3 threads 500-544 / 1068-1192 and 437-528 / 761-792; on 4
    426-436 / 798-938 and 393-401 / 712-760: the encoder 137 -> 112 ms and the final's decoder 305 ->
    176 (cheaper partials come more often, so the draft is fresher), at 60 % of a Pi 4 core while
    speaking instead of 54; later that evening, the host slower, 724 / 616 against 547-592 / 408-485
    (back to back again). A Pi 5: 244 -> 231 clean, 4 streams without drops. Capture and VAD
    need a few % of a core, so a 4-core board gives the engine all 4. The 2-core x86 keeps one
    thread (its final waits for the hangover, not the decode). An earlier offline pass
    (scripts/bench/drafts.py, emulated Pi 4 on the calibration host, a final right after a partial)
    had found 4 threads no faster than 2 (543 vs 530 ms); live, where the partials' pacing follows
    their cost, they are.
    """
    n = physical_cores() if cores is None else cores
    usable = n if n >= MAX_DEFAULT_THREADS else n - 1
    return max(1, min(MAX_DEFAULT_THREADS, usable // max(1, engines)))


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


def file_mappings() -> Iterator[tuple[int, int, str, int, str]]:
    """This process's file-backed mappings, from /proc/self/maps: (start, end, permissions, offset in
    the file, path). Nothing where it cannot be read."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                parts = line.split(maxsplit=5)
                if len(parts) == 6 and parts[5].startswith("/"):
                    start, end = (int(x, 16) for x in parts[0].split("-"))
                    yield start, end, parts[1], int(parts[2], 16), parts[5].strip()
    except OSError:
        return


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
    ranges = [
        (start, end - start) for start, end, perms, _, file in file_mappings() if file == target and "w" not in perms
    ]
    try:
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
    for start, end, _, offset, file in file_mappings():
        if start <= address < end:
            return file, offset + address - start
    return None
