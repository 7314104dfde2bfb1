"""Watchdog pings (WATCHDOG=1) at half of WatchdogSec, only while the pipeline is alive.

systemd-python has no watchdog_enabled(), so WATCHDOG_USEC / WATCHDOG_PID are
read here. Pings come from the main thread's tick, so a stuck main thread stops
them as well; a stalled capture or a stuck worker stops them through
`systemd.liveness`. Either way systemd kills and restarts the service after
WatchdogSec (Restart=on-failure covers watchdog timeouts).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from voxnode.lifecycle import Hook
from voxnode.systemd.liveness import liveness, readiness
from voxnode.systemd.notify import Notifier

if TYPE_CHECKING:
    from voxnode.host_view import HostView

log = logging.getLogger(__name__)


def watchdog_interval(environ: Mapping[str, str] = os.environ, pid: int | None = None) -> float | None:
    """WatchdogSec in seconds, or None when systemd does not expect pings from this process."""
    usec = environ.get("WATCHDOG_USEC", "")
    if not usec:
        return None
    wpid = environ.get("WATCHDOG_PID", "")
    # Set when the watchdog belongs to one process of several (e.g. a wrapper script): only it pings.
    if wpid and wpid != str(os.getpid() if pid is None else pid):
        return None
    try:
        value = int(usec)
    except ValueError:
        log.warning("ignoring WATCHDOG_USEC=%r: not an integer", usec)
        return None
    return value / 1e6 if value > 0 else None


class WatchdogHook(Hook):
    def __init__(self, notifier: Notifier, interval_s: float | None):
        self.notifier = notifier
        self.interval_s = interval_s
        self.pings = 0
        self._last_ping = float("-inf")
        self._stalled_reason = ""
        # systemd arms the watchdog at READY=1, but any earlier WATCHDOG=1 would arm it too and turn a
        # slow start (model load, first audio) into a watchdog kill; TimeoutStartSec covers starting.
        self._armed = False

    def _watchdog_s(self) -> float | None:
        """WatchdogSec, when systemd expects pings and can be told; else None."""
        return self.interval_s if self.notifier.enabled else None

    @property
    def tick_interval_s(self) -> float:
        """Four looks per ping interval (a stall is seen well before systemd's deadline), at most 1 s apart."""
        interval = self._watchdog_s()
        return 1.0 if interval is None else max(0.1, min(1.0, interval / 8))

    @property
    def enabled(self) -> bool:
        return self._watchdog_s() is not None

    def on_ready(self, host: HostView) -> None:
        interval = self._watchdog_s()
        if interval is not None:
            log.info("watchdog: pinging every %.1f s while the pipeline is alive", interval / 2)

    def tick(self, host: HostView, now: float) -> None:
        interval = self._watchdog_s()
        if interval is None:
            return
        vitals = host.vitals()
        if not self._armed:
            if not readiness(vitals).ok:
                return
            self._armed = True
        verdict = liveness(vitals, now)
        if not verdict.ok:
            if verdict.reason != self._stalled_reason:
                log.error(
                    "pipeline stalled (%s): withholding watchdog pings; systemd restarts voxnode if this lasts %.0f s",
                    verdict.reason,
                    interval,
                )
                self._stalled_reason = verdict.reason
            return
        if self._stalled_reason:
            log.warning("pipeline alive again; watchdog pings resume")
            self._stalled_reason = ""
        if now - self._last_ping >= interval / 2:
            self.notifier.send("WATCHDOG=1")
            self._last_ping = now
            self.pings += 1
