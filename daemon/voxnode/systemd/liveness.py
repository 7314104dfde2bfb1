"""Two questions a supervisor asks the daemon: is it ready (READY=1), is it alive (WATCHDOG=1)?

Both are computed from `Daemon` state on the main thread: source stats written
by the capture threads, heartbeats written by the workers, and readiness checks
registered by components that load slowly (the engine).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from voxnode.daemon import Daemon


@dataclass(frozen=True)
class Verdict:
    ok: bool
    reason: str = ""  # why not, for logs and STATUS=


def readiness(daemon: Daemon) -> Verdict:
    """Ready when every stream's source produced a frame or reported a device error after its first
    open attempt (a missing microphone is a state to report, not a reason to block start-up forever),
    and every registered readiness check (e.g. the model is loaded) passes."""
    for check in daemon.ready_checks:
        if not check():
            return Verdict(False, f"waiting for {getattr(check, '__name__', 'a component')}")
    waiting = [rt.name for rt in daemon.streams if rt.source.stats.frames == 0 and rt.source.stats.state != "backoff"]
    if waiting:
        return Verdict(False, "waiting for first audio from " + ", ".join(waiting))
    return Verdict(True)


def liveness(daemon: Daemon, now: float) -> Verdict:
    """Alive when every capture delivers audio (or is in a reported backoff) and no worker is stuck."""
    svc = daemon.config.service
    problems = []
    for rt in daemon.streams:
        src, st = rt.source, rt.source.stats
        if st.state in ("backoff", "finished"):
            continue  # reported device trouble is handled by retrying, not by restarting the process
        if st.state == "stopped":
            problems.append(f"{src.name}: capture thread ended")
            continue
        # "starting" (still opening) and "running" are judged by the newest sign of life.
        age = now - max(st.last_frame_mono, src.started_mono)
        if age > svc.capture_stall_s:
            device = st.granted.get("device") or rt.config.device
            problems.append(f"{src.name}: no audio from {device!r} for {age:.0f} s")
    for rt in daemon.streams:
        if not rt.worker.is_alive() and rt.source.is_alive():
            problems.append(f"{rt.worker.heartbeat.name}: worker thread died")
    for hb in daemon.heartbeats():
        busy = hb.stuck_for(now)
        if busy > svc.worker_stall_s:
            problems.append(f"{hb.name}: stuck on one unit of work for {busy:.0f} s")
    return Verdict(not problems, "; ".join(problems))
