"""Which TFLite interpreter we run on, and whether XNNPACK took the whole graph.

ai-edge-litert is the supported runtime; tflite_runtime is accepted as a
fallback for boards where only that wheel exists (it rejects models from
recent converters, so the fallback is logged).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

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
            raise ModelError(
                f"no TFLite runtime: install ai-edge-litert (import failed: {first})"
            ) from None
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
    cores = set()
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


def default_num_threads() -> int:
    # Half the cores: the other half stays free for capture, VAD and MQTT,
    # and a Pi's thermal budget rarely sustains all four cores anyway.
    return max(1, physical_cores() // 2)


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
