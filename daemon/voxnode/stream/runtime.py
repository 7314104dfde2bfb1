"""The running streams: per stream its source, worker and pipeline (`StreamRuntime`), all of them
keyed by name in config order (`Streams`, the daemon's component for capture)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from voxnode.audio.echo_reference import ReferenceTap
from voxnode.audio.source import AudioSource
from voxnode.config.audio import StreamConfig
from voxnode.lifecycle import Component

from .pipeline import StreamPipeline
from .worker import StreamWorker

log = logging.getLogger(__name__)

SOURCE_STOP_S = 1.0  # how long all capture threads together get to leave their reads


@dataclass(frozen=True)
class StreamRuntime:
    config: StreamConfig
    source: AudioSource
    pipeline: StreamPipeline
    worker: StreamWorker
    reference: ReferenceTap | None = None  # the echo reference's capture (echo_reference), paired by the worker

    @property
    def name(self) -> str:
        return self.config.name

    def start(self) -> None:
        self.worker.start()
        self.source.start()
        if self.reference is not None:
            self.reference.source.start()

    def snapshot(self) -> dict:
        """Capture state and counters, ring depth and drops, and the recognition real-time factor."""
        snap = {
            **self.source.stats.snapshot(),
            "queue_depth": self.source.ring.depth,
            "dropped_frames": self.source.ring.dropped,
        }
        rtf = self.pipeline.stats.rtf
        if rtf is not None:  # known once the stream has had something decoded
            snap["rtf"] = rtf
        snap.update(self.pipeline.room())  # the noise floor, once the stream has had audio
        snap.update(self.pipeline.playback.snapshot())  # whether the node plays (stream/playback.py)
        snap.update(self.pipeline.frontend.echo_figures())  # a stream with echo_reference
        if self.reference is not None:
            snap.update(self.reference.snapshot())
        return snap

    def sources(self) -> list[AudioSource]:
        return [self.source] if self.reference is None else [self.source, self.reference.source]


def stop_streams(runtimes: list[StreamRuntime], deadline: float) -> None:
    """Stop these sources, then let their workers finish what they hold, all by `deadline`.

    Every source is told to stop before any is waited for, and they share one short
    wait: a capture blocked in an ALSA read (a stalled device) must not eat the
    budget of the workers' utterances, stream after stream.
    """
    sources = [src for rt in runtimes for src in rt.sources()]
    for src in sources:
        src.stop(timeout=0)
    join_by = min(deadline, time.monotonic() + SOURCE_STOP_S)
    for src in sources:
        src.stop(timeout=max(0.0, join_by - time.monotonic()))
        src.ring.close()  # a capture stuck in a read never closes its ring itself
    for rt in runtimes:
        if not rt.worker.wait(deadline):
            log.warning(
                "stream %s: worker did not finish in time; an utterance it held is lost",
                rt.name,
                extra={"STREAM": rt.name},
            )


class Streams(Component):
    """Every stream of the process. The main thread changes the set (start, reload, stop); other
    threads may iterate it: changes replace the mapping instead of mutating it."""

    def __init__(self, make: Callable[[StreamConfig], StreamRuntime], configs: Iterable[StreamConfig] = ()):
        self._make = make
        self._initial = tuple(configs)
        self._by_name: dict[str, StreamRuntime] = {}

    def __iter__(self) -> Iterator[StreamRuntime]:
        return iter(list(self._by_name.values()))

    def __len__(self) -> int:
        return len(self._by_name)

    def __getitem__(self, name: str) -> StreamRuntime:
        return self._by_name[name]

    def names(self) -> list[str]:
        return list(self._by_name)

    def start(self) -> None:
        for config in self._initial:
            self.add(config)

    def add(self, config: StreamConfig) -> StreamRuntime:
        rt = self._make(config)
        self._by_name = {**self._by_name, rt.name: rt}
        rt.start()
        return rt

    def remove(self, names: set[str], deadline: float) -> None:
        """Stop these streams together, each worker finishing its frames by `deadline`."""
        stop_streams([rt for rt in self._by_name.values() if rt.name in names], deadline)
        self._by_name = {n: rt for n, rt in self._by_name.items() if n not in names}

    def reorder(self, names: list[str]) -> None:
        """Follow the config's order, which snapshots and STATUS= lines show."""
        self._by_name = {n: self._by_name[n] for n in names if n in self._by_name}

    def stop(self, deadline: float) -> None:
        runtimes = list(self._by_name.values())
        stop_streams(runtimes, deadline)
        for rt in runtimes:
            st = rt.source.stats
            log.info(
                "stream %s stopped: %d frames, %d dropped, %d xruns, %d device errors",
                rt.name,
                st.frames,
                rt.source.ring.dropped,
                st.xruns,
                st.device_errors,
            )
