"""Per-stream final latency p50/p95 over the last finals, from the events themselves.

The pipeline may report its own figures in Daemon.snapshot(); these fill in
when it does not, so the health report and the HA latency sensor always have them.
"""

from __future__ import annotations

import math
import threading
from collections import deque

WINDOW = 200  # finals per stream


class LatencyWindows:
    def __init__(self, window: int = WINDOW):
        self._window = window
        self._by_stream: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def add(self, stream: str, latency_ms: float) -> None:
        with self._lock:
            d = self._by_stream.get(stream)
            if d is None:
                d = self._by_stream[stream] = deque(maxlen=self._window)
            d.append(float(latency_ms))

    def report(self, stream: str) -> dict:
        with self._lock:
            values = sorted(self._by_stream.get(stream, ()))
        if not values:
            return {}
        return {
            "latency_p50_ms": _pct(values, 0.50),
            "latency_p95_ms": _pct(values, 0.95),
            "latency_window": len(values),
        }


def _pct(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    k = max(0, min(len(sorted_values) - 1, math.ceil(q * len(sorted_values)) - 1))
    return round(sorted_values[k], 1)
