"""Flags RSS that grows steadily: a least-squares slope over a window, not a single spike.

A model load or a long utterance raises RSS once; a leak raises it all the
time. So the watch needs (1) a full window of samples, (2) a fitted growth
over the window above the threshold, and (3) most steps going up.
"""

from __future__ import annotations

import logging
from collections import deque

log = logging.getLogger(__name__)


class LeakWatch:
    def __init__(self, window_s: float, threshold_bytes: float, min_samples: int = 10):
        self.window_s = window_s
        self.threshold_bytes = threshold_bytes
        self.min_samples = min_samples
        self._samples: deque[tuple[float, int]] = deque()
        self.suspected = False
        self.growth_bytes = 0.0

    def add(self, now: float, rss: int) -> bool:
        self._samples.append((now, rss))
        while self._samples and now - self._samples[0][0] > self.window_s:
            self._samples.popleft()
        span = now - self._samples[0][0]
        if len(self._samples) < self.min_samples or span < 0.9 * self.window_s:
            self.growth_bytes = 0.0
            return self._set(False)
        xs = [t for t, _ in self._samples]
        ys = [r for _, r in self._samples]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        var = sum((x - mx) ** 2 for x in xs)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var if var else 0.0
        self.growth_bytes = slope * self.window_s
        steps = list(zip(ys, ys[1:], strict=False))  # consecutive pairs
        ups = sum(1 for a, b in steps if b > a)
        downs = sum(1 for a, b in steps if b < a)
        steady = ups >= 2 * max(1, downs)
        return self._set(self.growth_bytes > self.threshold_bytes and steady)

    def _set(self, flag: bool) -> bool:
        if flag and not self.suspected:
            log.warning(
                "possible memory leak: RSS grew %.1f MB over the last %.0f s and keeps growing "
                '(send {"cmd": "memory"} on the cmd topic for the top allocations)',
                self.growth_bytes / 1e6,
                self.window_s,
            )
        elif self.suspected and not flag:
            log.info("RSS growth back under the leak threshold")
        self.suspected = flag
        return flag

    def report(self) -> dict:
        return {
            "suspected": self.suspected,
            "growth_bytes": int(self.growth_bytes),
            "window_s": self.window_s,
            "threshold_bytes": int(self.threshold_bytes),
        }
