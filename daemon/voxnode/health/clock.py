"""Whether the wall clock can be trusted for the times voxnode writes (a transcript's start and end,
health's `time`, a command's reply), and when it was stepped.

A Raspberry Pi has no real-time clock (a Pi 5 only with its battery fitted): it boots with the time
it last shut down (fake-hwclock) or with 1970, and runs on that until an NTP client
(systemd-timesyncd, chrony) reaches a server and steps the clock, which on a node without network
may be never. Until then every time voxnode writes is off by hours or days, and `voxnode fleet`
reads the node's reports as that old. voxnode keeps working either way (its latencies, retries and
deadlines run on the monotonic clock): this only says so, in health (`clock`), in Prometheus
(`voxnode_clock_synchronized`, `voxnode_clock_steps_total`), in the log when the state changes or the
clock is stepped, and in `voxnode fleet`'s reading of a report's age.

Synchronised is the kernel's word, as `timedatectl` reads it (systemd's ntp_synced()): adjtimex()
with a maximum error under 16 s: an NTP client lowers it each time it sets the clock, and the kernel
raises it by 500 ppm of the time since, so a clock no client has set for ~9 hours reads unsynchronised.
"""

from __future__ import annotations

import ctypes
import logging
import sys
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

UNSYNCED_MAX_ERROR_US = 16_000_000  # the kernel's and systemd's bound: at or above it, not synchronised
# A step: the wall clock moved this much against the time since boot between two checks (one health
# interval). An NTP client slews by at most 500 ppm (15 ms in 30 s) and steps only beyond 128 ms
# (ntpd, timesyncd) or 1 s (chrony's makestep); what is logged is a step a person would notice.
STEP_S = 1.0


class _Timex(ctypes.Structure):
    """struct timex up to `maxerror` (linux/timex.h: `modes` an int, the rest longs); the kernel
    writes the whole structure, so `_rest` pads it to its full size (208 bytes on LP64)."""

    _fields_ = [
        ("modes", ctypes.c_uint),
        ("offset", ctypes.c_long),
        ("freq", ctypes.c_long),
        ("maxerror", ctypes.c_long),
        ("_rest", ctypes.c_char * 256),
    ]


def kernel_synchronized() -> bool | None:
    """The kernel's view (adjtimex, read only); None where it cannot be asked (not Linux, no libc)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        tx = _Timex()  # modes 0: read, change nothing (allowed without CAP_SYS_TIME)
        if ctypes.CDLL(None, use_errno=True).adjtimex(ctypes.byref(tx)) < 0:
            return None
    except (OSError, AttributeError):
        return None
    return tx.maxerror < UNSYNCED_MAX_ERROR_US


def _since_boot() -> float:
    """CLOCK_BOOTTIME: monotonic, and counting a suspend (which the wall clock also counts), so a board
    that slept is not taken for a stepped clock; CLOCK_MONOTONIC where there is no such clock."""
    return time.clock_gettime(time.CLOCK_BOOTTIME) if hasattr(time, "CLOCK_BOOTTIME") else time.monotonic()


class ClockWatch:
    """Checked once per health interval (on the reporter's thread): the kernel's synchronised state,
    logged when it changes, and steps of the wall clock against the time since boot, logged and counted."""

    def __init__(
        self,
        synchronized: Callable[[], bool | None] = kernel_synchronized,
        wall: Callable[[], float] = time.time,
        mono: Callable[[], float] = _since_boot,
    ):
        self._read, self._wall, self._mono = synchronized, wall, mono
        self._offset = wall() - mono()
        self.synchronized: bool | None = None
        self.steps = 0
        self.last_step_s: float | None = None
        self._checked = False  # the first check() is the daemon's first health tick: nothing is said before it runs

    def check(self) -> None:
        offset, synced = self._wall() - self._mono(), self._read()
        step, self._offset = offset - self._offset, offset
        if abs(step) >= STEP_S:
            self.steps += 1
            self.last_step_s = round(step, 3)
            log.warning(
                "system clock stepped %s%.1f s%s: times written before it (transcripts, health) are off by that much",
                "+" if step > 0 else "-",
                abs(step),
                " (NTP set it)" if synced and self.synchronized is False else "",
            )
        if synced is False and self.synchronized is not False:
            log.info(
                "system clock not synchronised (no NTP time %s): the times voxnode writes follow it",
                "any more" if self._checked else "yet",
            )
        elif synced and self.synchronized is False:
            log.info("system clock synchronised")
        self.synchronized, self._checked = synced, True

    def report(self) -> dict:
        """`synchronized` is None until the first check (and where the kernel cannot be asked)."""
        return {"synchronized": self.synchronized, "steps": self.steps, "last_step_s": self.last_step_s}
