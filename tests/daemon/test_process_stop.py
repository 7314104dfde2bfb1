"""stop_process on real child processes: one that leaves on SIGTERM, one that ignores it, one that has
already exited, and another signal than SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from voxnode.process_stop import KILLED_REAP_S, stop_process

pytestmark = pytest.mark.unit  # make check: needs only the venv (pyproject.toml markers)

# The child says "ready" once its signal handlers are in place, then sleeps; argv[1]: "ignore" SIGTERM,
# "exit7" on SIGTERM (exit code 7), or "default" (SIGTERM ends it).
CHILD = r"""
import signal, sys, time
# Ctrl-C as a foreground job has it: run as a script's background job (`pytest ... &`), the child
# inherits SIGINT ignored, and the SIGINT test waited out its 30 s for SIGKILL.
signal.signal(signal.SIGINT, signal.default_int_handler)
if sys.argv[1] == "ignore":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
elif sys.argv[1] == "exit7":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(7))
print("ready", flush=True)
time.sleep(120)
"""


def start(mode: str) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", CHILD, mode], stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stdout.readline() == "ready\n"
    return p


def reaped(p: subprocess.Popen) -> bool:
    """No zombie is left: the pid is no longer this process's child."""
    try:
        os.waitpid(p.pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def test_a_child_that_ignores_sigterm_is_killed_after_the_timeout_and_reaped():
    p = start("ignore")
    t0 = time.monotonic()
    rc = stop_process(p, 0.5)
    took = time.monotonic() - t0
    assert rc == -signal.SIGKILL
    assert took >= 0.5  # it was given its time first
    assert took < 0.5 + KILLED_REAP_S  # then killed, not waited on for its 120 s
    assert reaped(p)


@pytest.mark.parametrize(("mode", "code"), [("default", -signal.SIGTERM), ("exit7", 7)])
def test_a_child_that_leaves_on_sigterm_is_reaped_with_its_code(mode, code):
    p = start(mode)
    assert stop_process(p, 30) == code
    assert p.returncode == code and reaped(p)


def test_an_exited_child_returns_its_code_whether_reaped_or_not():
    p = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)  # it has exited; still a zombie, not reaped
    assert stop_process(p, 0) == 3  # no TimeoutExpired, no kill: it is reaped with its own code
    assert reaped(p)
    assert stop_process(p, 0) == 3  # a second stop (already reaped) answers the same, no error


def test_the_signal_given_is_the_one_sent():
    p = start("ignore")  # SIGTERM would be ignored; SIGINT ends it (KeyboardInterrupt, re-raised as the signal)
    assert stop_process(p, 30, signal.SIGINT) == -signal.SIGINT  # not -SIGKILL at the timeout
