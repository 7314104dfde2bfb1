"""Cumulative histograms of what the pipeline times: final latency and engine time per decode.

Observed as the events happen (the health reporter hears every final and every decode), read at
scrape time by the Prometheus collector. Buckets are cumulative counts, as Prometheus wants them,
so a fleet's histograms can be summed and a percentile taken over all nodes (which per-node
percentile gauges never allow). No dependency on prometheus-client: it is an optional extra.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterable
from dataclasses import dataclass

# Seconds. Final latency (end of speech -> final ready): 0.50 s p50 / 0.52-1.1 s p95 for 1-10
# streams on the x86 test machine (docs/benchmarks.md, bench_stream); a Raspberry Pi 4 is 2-3x
# slower, and an engine far behind reaches several seconds. So fine steps around 0.5-2 s, and a
# tail to 10 s for a node in trouble.
FINAL_LATENCY_BUCKETS = (0.1, 0.25, 0.4, 0.5, 0.6, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0)
# Seconds of engine time for one decode: speculative finals 0.27-0.32 s p95, decode runs p50
# 0.2-0.5 s on the x86 test machine (docs/benchmarks.md); partials of short audio are shorter,
# a 30 s window on a Pi 4 takes several seconds.
DECODE_BUCKETS = (0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0)
# dB: a final's speech over the room's noise (TranscriptEvent.speech_snr_db). Measured live in noisy
# rooms (docs/benchmarks.md, stop 51), tiny.en's WER under 5 dB 90 %, 5-10 dB 26 %, 10-15 dB 10 %, over
# 15 dB 6 %: so a fleet reads the share of finals heard under 5 or 10 dB from the buckets.
SPEECH_SNR_BUCKETS = (0.0, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0)


@dataclass(frozen=True)
class HistogramSample:
    labels: tuple[str, ...]
    buckets: tuple[tuple[float, int], ...]  # (upper bound, cumulative count), +Inf last
    count: int
    sum: float


class Histogram:
    """Counts per label set (e.g. (stream,) or (stream, kind)); observe() from any thread."""

    def __init__(self, bounds: tuple[float, ...]):
        self.bounds = tuple(sorted(bounds))
        self._lock = threading.Lock()
        self._series: dict[tuple[str, ...], tuple[list[int], list[float]]] = {}

    def observe(self, labels: tuple[str, ...], value: float) -> None:
        i = bisect.bisect_left(self.bounds, value)  # the first bound >= value (le is inclusive)
        with self._lock:
            series = self._series.get(labels)
            if series is None:
                series = self._series[labels] = ([0] * (len(self.bounds) + 1), [0.0])
            series[0][i] += 1
            series[1][0] += value

    def samples(self, known: Iterable[tuple[str, ...]] = ()) -> list[HistogramSample]:
        """Every label set observed so far, and each of `known` not observed yet with zero buckets,
        count and sum. Prometheus's conventions ask for that: a series that only appears with its
        first observation is invisible to rate(), absent() alerts and dashboards on a quiet node."""
        with self._lock:
            items = [(labels, list(counts), total[0]) for labels, (counts, total) in self._series.items()]
        seen = {labels for labels, _, _ in items}
        for labels in dict.fromkeys(known):  # in order, once each
            if labels not in seen:
                items.append((labels, [0] * (len(self.bounds) + 1), 0.0))
        out = []
        for labels, counts, total in items:
            cumulative, running = [], 0
            for bound, n in zip((*self.bounds, float("inf")), counts, strict=True):
                running += n
                cumulative.append((bound, running))
            out.append(HistogramSample(labels, tuple(cumulative), running, total))
        return out
