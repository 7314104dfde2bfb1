"""Stopping a child process: a signal, a bounded wait, SIGKILL after it, and the exit code reaped.

The one way voxnode (the demo's Mosquitto) and its tests and benchmarks (daemons, brokers, Home
Assistant's voxnode) stop a process they started: ask it to stop, give it `timeout_s` to finish, then
kill it, and always reap it, so no zombie and no stray process is left behind.
"""

from __future__ import annotations

import signal
import subprocess

# After SIGKILL the kernel ends a process at once unless it sits in an uninterruptible sleep (a hung
# driver): the reap is bounded too, so a stop cannot hang on such a process.
KILLED_REAP_S = 5.0


def stop_process(proc: subprocess.Popen, timeout_s: float, sig: int = signal.SIGTERM) -> int:
    """Send `sig`, wait up to `timeout_s` seconds, SIGKILL the process if it is still running; its exit
    code (negative: the signal that ended it, -SIGKILL when killed here). A process that has already
    exited is only reaped (no signal): its own code, never an error. Raises subprocess.TimeoutExpired
    only if a killed process is still there KILLED_REAP_S later."""
    if proc.poll() is not None:
        return proc.returncode
    proc.send_signal(sig)  # Popen skips it when the process has exited in between (no ProcessLookupError)
    try:
        return proc.wait(max(0.0, timeout_s))
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait(KILLED_REAP_S)
