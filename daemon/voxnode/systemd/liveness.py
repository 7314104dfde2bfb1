"""Two questions a supervisor asks the daemon: is it ready (READY=1), is it alive (WATCHDOG=1)?

Both are computed on the main thread from the daemon's `Vitals` (host_view.py): source stats written
by the capture threads, heartbeats written by the workers, and readiness checks registered by
components that load slowly (the engine).
"""

from __future__ import annotations

from dataclasses import dataclass

from voxnode.host_view import Vitals


@dataclass(frozen=True)
class Verdict:
    ok: bool
    reason: str = ""  # why not, for logs and STATUS=


def readiness(vitals: Vitals) -> Verdict:
    """Ready when every stream's source produced a frame or reported a device error after its first
    open attempt (a missing microphone is a state to report, not a reason to block start-up forever),
    and every registered readiness check (e.g. the model is loaded) passes."""
    for check in vitals.ready_checks:
        if not check():
            return Verdict(False, f"waiting for {getattr(check, '__name__', 'a component')}")
    waiting = [c.name for c in vitals.streams if c.frames == 0 and c.state != "backoff"]
    if waiting:
        return Verdict(False, "waiting for first audio from " + ", ".join(waiting))
    return Verdict(True)


def liveness(vitals: Vitals, now: float) -> Verdict:
    """Alive when every capture delivers audio (or is in a reported backoff) and no worker is stuck."""
    problems = []
    for c in vitals.streams:
        if c.state in ("backoff", "finished"):
            continue  # reported device trouble is handled by retrying, not by restarting the process
        if c.state == "stopped":
            problems.append(f"{c.name}: capture thread ended")
            continue
        # "starting" (still opening) and "running" are judged by the newest sign of life.
        age = now - max(c.last_frame_mono, c.started_mono)
        if age > vitals.service.capture_stall_s:
            problems.append(f"{c.name}: no audio from {c.device!r} for {age:.0f} s")
    for c in vitals.streams:
        if not c.worker_alive and c.capture_alive:
            problems.append(f"{c.worker}: worker thread died")
    for hb in vitals.heartbeats:
        busy = hb.stuck_for(now)
        if busy > vitals.service.worker_stall_s:
            problems.append(f"{hb.name}: stuck on one unit of work for {busy:.0f} s")
    return Verdict(not problems, "; ".join(problems))
