"""sd_notify: READY=1 once audio flows, STATUS= when the summary changes, RELOADING=1/READY=1 around
a reload, STOPPING=1 on shutdown.

`Notifier` is the transport (systemd-python); `NotifyHook` is the Hook that decides what to say
and when.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from voxnode.lifecycle import Hook
from voxnode.systemd.liveness import liveness, readiness

if TYPE_CHECKING:
    from voxnode.host_view import HostView
    from voxnode.reload import ReloadResult

log = logging.getLogger(__name__)

STATUS_MAX = 400  # `systemctl status` shows one line; keep it bounded
STATUS_NOTE_MIN = 200  # of it, the least a note (a refused reload's error) keeps before the streams' states


class Notifier:
    """Sends sd_notify messages; does nothing when not started by systemd (no NOTIFY_SOCKET)."""

    def __init__(self, environ: Mapping[str, str] = os.environ):
        self.enabled = bool(environ.get("NOTIFY_SOCKET"))
        self._warned = False

    def send(self, *assignments: str) -> bool:
        if not self.enabled:
            return False
        from systemd import daemon as sd

        try:
            return bool(sd.notify("\n".join(assignments)))
        except OSError as e:
            # The socket vanished (systemd re-executing, a test tearing down): not worth dying for.
            if not self._warned:
                log.warning("sd_notify failed: %s", e)
                self._warned = True
            return False


def monotonic_usec() -> int:
    # systemd >= 253 wants RELOADING=1 to carry the CLOCK_MONOTONIC time it was sent at.
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000


def status_line(host: HostView, now: float, note: str = "") -> str:
    """One line: stream states, last latency, and anything wrong. No counters, so it only changes
    when something a person would want to see changes."""
    figures = host.status()
    parts = []
    for name, st in figures.streams.items():
        if st["state"] == "backoff":
            parts.append(f"{name} backoff ({st['last_error'][:60]})")
        else:
            parts.append(f"{name} {st['state']}")
    line = f"{len(parts)} stream{'s' if len(parts) != 1 else ''}: " + ", ".join(parts)
    if figures.last_latency_ms is not None:
        line += f"; last latency {figures.last_latency_ms:.0f} ms"
    alive = liveness(host.vitals(), now)
    if not alive.ok:
        line += f"; STALLED: {alive.reason}"
    if note:
        # First: the note matters most. Cut, where it is long (a refused reload's error names the config
        # file, the key and its file: over 400 characters with long paths), so the streams still show.
        room = max(STATUS_NOTE_MIN, STATUS_MAX - len(line) - 2)
        line = f"{note if len(note) <= room else note[: room - 1] + '…'}; {line}"
    return line[:STATUS_MAX]


class NotifyHook(Hook):
    def __init__(self, notifier: Notifier):
        self.notifier = notifier
        self.state = "starting"  # starting | ready | reloading | stopping
        self._last_status = ""
        self._note = ""  # sticky remark, e.g. the last reload error, until the next good reload

    @property
    def tick_interval_s(self) -> float:
        # READY=1 promptly once audio arrives; afterwards STATUS= (for people) once a second is plenty.
        return 0.1 if self.state in ("starting", "reloading") else 1.0

    def _status(self, host: HostView, now: float) -> str:
        return status_line(host, now, self._note)

    def on_ready(self, host: HostView) -> None:
        # The daemon has started its threads; readiness is decided in tick() once audio arrives.
        self._send_status(host, time.monotonic(), prefix=())

    def tick(self, host: HostView, now: float) -> None:
        if self.state in ("starting", "reloading"):
            verdict = readiness(host.vitals())
            if verdict.ok:
                log.info("ready" if self.state == "starting" else "ready after reload")
                self.state = "ready"
                self._send_status(host, now, prefix=("READY=1",), force=True)
                return
        self._send_status(host, now, prefix=())

    def on_reloading(self, host: HostView) -> None:
        self.state = "reloading"
        self.notifier.send("RELOADING=1", f"MONOTONIC_USEC={monotonic_usec()}", "STATUS=reloading config")
        self._last_status = "reloading config"

    def on_reloaded(self, host: HostView, result: ReloadResult) -> None:
        self._note = "" if result.ok else result.summary()
        # READY=1 follows from tick() once the (re)started streams deliver audio; a rejected config
        # leaves the old streams running, which are ready at once.

    def on_stopping(self, host: HostView) -> None:
        self.state = "stopping"
        self.notifier.send("STOPPING=1", "STATUS=stopping: finishing utterances in flight")

    def _send_status(self, host: HostView, now: float, prefix: tuple[str, ...], force: bool = False) -> None:
        if self.state == "reloading" and not prefix:
            return  # keep "reloading config" visible until READY=1
        status = (
            self._status(host, now)
            if self.state != "starting"
            else ("starting: " + (readiness(host.vitals()).reason or "ready"))
        )
        if force or status != self._last_status:
            self._last_status = status
            self.notifier.send(*prefix, f"STATUS={status}")
