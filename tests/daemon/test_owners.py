"""One lifecycle below the top too (issue 25): every class of the daemon that makes a thread is a
`Component` (start, stop(deadline)), and hooks get a HostView, never the Daemon."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import voxnode
from voxnode.lifecycle import Component

ROOT = Path(voxnode.__file__).parent
# The one thread without an owner that could join it: an ALSA open blocked in the kernel cannot be
# interrupted, so the capture abandons the thread it runs on (audio/alsa_capture.py, PendingOpen).
ABANDONED = {("audio.alsa_capture", "PendingOpen")}
# What may name the Daemon: itself, its assembly and the reload it runs; no hook.
DAEMON_USERS = {"daemon.py", "cli.py", "outputs/table.py", "reload.py"}


def _makes_a_thread(f: ast.expr) -> bool:
    """threading.Thread(...), or voxnode.threads.NamedThread(...) (a Thread whose OS thread has its name)."""
    if isinstance(f, ast.Attribute):
        return f.attr in ("Thread", "NamedThread") and getattr(f.value, "id", "") in ("threading", "threads")
    return isinstance(f, ast.Name) and f.id == "NamedThread"


def thread_makers() -> set[tuple[str, str]]:
    """(module, class) of every class whose code makes a thread (_makes_a_thread)."""
    found = set()
    for path in ROOT.rglob("*.py"):
        tree = ast.parse(path.read_text())
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            for call in (n for n in ast.walk(cls) if isinstance(n, ast.Call)):
                if _makes_a_thread(call.func):
                    found.add((module, cls.name))
    return found


def test_every_class_that_makes_a_thread_is_a_component():
    makers = thread_makers()
    assert ("stream.worker", "StreamWorker") in makers  # the scan sees what it is meant to see
    not_components = sorted(
        (module, name)
        for module, name in makers - ABANDONED
        if not issubclass(getattr(importlib.import_module(f"voxnode.{module}"), name), Component)
    )
    assert not_components == [], "thread owners without start()/stop(deadline)"


def test_no_hook_names_the_daemon():
    pattern = re.compile(r"^\s*(from voxnode\.daemon import|import voxnode\.daemon)", re.M)
    naming = {str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py") if pattern.search(p.read_text())}
    assert naming <= DAEMON_USERS, sorted(naming - DAEMON_USERS)
