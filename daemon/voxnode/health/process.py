"""CPU and resident memory of this process, from /proc (no psutil on the board)."""

from __future__ import annotations

import os
import time

PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


class CpuMeter:
    """Process CPU % of one core since the previous call (100 = one core busy).

    A report asked for right after another (a command, a reconnect) would measure a few
    milliseconds of noise; under MIN_WINDOW_S it repeats the last figure and keeps measuring.
    """

    MIN_WINDOW_S = 1.0

    def __init__(self) -> None:
        self._last = self._sample()
        self._value = 0.0

    @staticmethod
    def _sample() -> tuple[float, float]:
        t = os.times()
        return time.monotonic(), t.user + t.system

    def percent(self) -> float:
        now = self._sample()
        wall, cpu = now[0] - self._last[0], now[1] - self._last[1]
        if wall < self.MIN_WINDOW_S:
            return self._value
        self._last = now
        self._value = round(100.0 * cpu / wall, 2)
        return self._value


def thread_count() -> int:
    return len(os.listdir("/proc/self/task"))
