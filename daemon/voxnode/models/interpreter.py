"""Opening a LiteRT interpreter for any of our models, with the one XNNPACK check.

Every model voxnode runs is built to run wholly on XNNPACK (docs/asr.md, docs/frontend.md): an op
left on LiteRT's reference kernels makes it several times slower, silently. So each interpreter is
checked once it is opened (`delegation`, read from the graph) and a model that XNNPACK did not take
whole is logged as a warning naming the ops, whoever loads it.
"""

from __future__ import annotations

import importlib
import logging
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from voxnode.errors import ModelError
from voxnode.models.runtime import Delegation, Runtime, delegation, load_runtime, release_file_pages
from voxnode.threads import name_new_threads

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Opened:
    interpreter: Any  # the runtime's Interpreter, tensors allocated
    delegation: Delegation
    runtime: Runtime


def open_interpreter(
    owner: str,
    *,
    path: Path | None = None,
    content: bytes | None = None,
    label: str = "",
    num_threads: int = 1,
    xnnpack: bool = True,
    builtin_ops: frozenset[str] = frozenset(),
    input_shape: list[int] | None = None,
    advice: str = "reinstall voxnode",
    threads_name: str = "",
) -> Opened:
    """An interpreter of the model file `path` (mapped; its pages are released once XNNPACK has packed
    the weights) or of the bytes `content` (shared by every interpreter of the model; `label` names
    them in messages), tensors allocated. `xnnpack` False: LiteRT's reference kernels, on purpose
    (no warning). `builtin_ops`: ops the model is known to leave to the builtin kernels (no
    warning for those). `input_shape`: the first input resized to it before the tensors are
    allocated (a dynamic input XNNPACK cannot prepare at its stored shape). `owner` (the config
    setting that loads the model) opens every message, `advice` ends the one of a model that
    does not load ("": none, the caller says what to do). `threads_name`: what XNNPACK's worker
    threads (num_threads - 1 of them) are called in `top -H` ("": the name of the thread that opens it)."""
    runtime = load_runtime()
    source = str(path) if path is not None else label or "(from memory)"
    kwargs: dict[str, Any] = {"model_path": str(path)} if path is not None else {"model_content": content}
    if not xnnpack:
        module = importlib.import_module(runtime.interpreter_class.__module__)
        kwargs["experimental_op_resolver_type"] = module.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    try:
        it = runtime.interpreter_class(num_threads=num_threads, **kwargs)
        if input_shape is not None:
            it.resize_tensor_input(it.get_input_details()[0]["index"], input_shape)
        with name_new_threads(threads_name) if threads_name and num_threads > 1 else nullcontext():
            it.allocate_tensors()  # the delegate is applied here, and its thread pool made
    except (ValueError, RuntimeError) as e:
        said = f"{owner}: {source} cannot be loaded by {runtime.name} {runtime.version} ({e})"
        raise ModelError(f"{said}; {advice}" if advice else said) from None
    d = delegation(it)
    if xnnpack:
        check_xnnpack(owner, source, d, builtin_ops)
    if path is not None and d.applied:
        release_file_pages(path)
    return Opened(it, d, runtime)


def check_xnnpack(owner: str, source: str, d: Delegation, builtin_ops: frozenset[str] = frozenset()) -> bool:
    """Warn when XNNPACK did not take the whole model (but for `builtin_ops`); True when it did."""
    if d.applied and set(d.not_delegated) <= builtin_ops:
        return True
    log.warning(
        "%s: XNNPACK did not take the whole model %s: %d of %d ops run on slow reference kernels (%s); "
        "expect several times slower inference",
        owner,
        source,
        len(d.not_delegated),
        d.ops_total,
        ", ".join(sorted(set(d.not_delegated))) or "no delegate applied",
    )
    return False


def describe(d: Delegation) -> str:
    """For a log line: "applied (47 ops, all delegated)"."""
    left = f"; left on the builtin kernels: {', '.join(d.not_delegated)}" if d.not_delegated else ", all delegated"
    return f"{'applied' if d.applied else 'NOT applied'} ({d.ops_total} ops{left})"
