"""CPU and resident memory of this process, from /proc (no psutil on the board)."""

from __future__ import annotations

import os
import time

PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


class CpuMeter:
    """Process CPU % of one core since the previous call (100 = one core busy)."""

    def __init__(self) -> None:
        self._last = self._sample()

    @staticmethod
    def _sample() -> tuple[float, float]:
        t = os.times()
        return time.monotonic(), t.user + t.system

    def percent(self) -> float:
        now = self._sample()
        wall, cpu = now[0] - self._last[0], now[1] - self._last[1]
        self._last = now
        return round(100.0 * cpu / wall, 2) if wall > 0 else 0.0


def thread_count() -> int:
    return len(os.listdir("/proc/self/task"))
