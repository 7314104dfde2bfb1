"""The running streams: per stream its source, worker and pipeline (`StreamRuntime`, which starts and
stops its worker and sources), all of them keyed by name in config order (`Streams`, the daemon's
component for capture, and the one registry of which streams run and their pipelines: recognition
asks it through `Streams.pipelines`)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

from voxnode.audio.echo_reference import ReferenceTap
from voxnode.audio.source import AudioSource
from voxnode.config.audio import StreamConfig
from voxnode.heartbeat import Heartbeat
from voxnode.host_view import CaptureVitals
from voxnode.lifecycle import STOP_TIMEOUT_S, Component, start_all, stop_all

from .pipeline import StreamPipeline
from .worker import StreamWorker

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StreamRuntime(Component):
    config: StreamConfig
    source: AudioSource
    pipeline: StreamPipeline
    worker: StreamWorker
    reference: ReferenceTap | None = None  # the echo reference's capture (echo_reference), paired by the worker

    @property
    def name(self) -> str:
        return self.config.name

    def children(self) -> list[Component]:
        """Started in this order, stopped in reverse: the worker reads before the sources capture, and
        the sources stop (closing their rings) before the worker finishes what it holds."""
        return [self.worker, *self.sources()]

    def start(self) -> None:
        start_all(self.children())

    def stop(self, deadline: float) -> None:
        stop_all(self.children(), deadline)

    def vitals(self) -> CaptureVitals:
        """The capture and the worker as the supervisor judges them (systemd/liveness.py)."""
        src, st = self.source, self.source.stats
        device = st.granted.get("device") or self.config.device
        alive = src.is_alive()
        return CaptureVitals(
            src.name, device, st.state, st.frames, st.last_frame_mono, src.started_mono, alive,
            self.worker.heartbeat.name, self.worker.is_alive(),
        )  # fmt: skip

    def snapshot(self) -> dict:
        """Capture state and counters, ring depth and drops, and the recognition real-time factor."""
        snap = {
            **self.source.stats.snapshot(),
            "queue_depth": self.source.ring.depth,
            "dropped_frames": self.source.ring.dropped,
        }
        if self.source.input_check is not None:  # a microphone: digital silence, clipping
            snap.update(self.source.input_check.figures.snapshot())
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
    """Stop these streams (each its sources, then its worker finishing what it holds), all by `deadline`.

    Every source is told to stop before any stream is stopped, so they share one short wait
    (audio.source.SOURCE_STOP_S): a capture blocked in an ALSA read (a stalled device) must not eat
    the budget of the workers' utterances, stream after stream.
    """
    for rt in runtimes:
        for src in rt.sources():
            src.request_stop()
    stop_all(runtimes, deadline)


# Builds a stream's runtime around the pipeline given (one a reload built before stopping anything),
# or around a new one when given None.
MakeStream = Callable[[StreamConfig, StreamPipeline | None], StreamRuntime]


class Streams(Component):
    """Every stream of the process, the one owner of which streams run and their pipelines. The main
    thread changes the set (start, reload, stop); other threads may iterate it: changes replace the
    mapping instead of mutating it."""

    def __init__(self, make: MakeStream, configs: Iterable[StreamConfig] = ()):
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

    def pipelines(self) -> Mapping[str, StreamPipeline]:
        """The running streams' pipelines by name (what Recognition's controls and stats read); a
        stream that failed to start, or is stopped, has none here."""
        return {n: rt.pipeline for n, rt in self._by_name.items()}

    def start(self) -> None:
        try:
            for config in self._initial:
                self.add(config)
        except BaseException:  # the streams already started stop again, as start_all's rollback does
            self.stop(time.monotonic() + STOP_TIMEOUT_S)
            raise

    def add(self, config: StreamConfig, pipeline: StreamPipeline | None = None) -> StreamRuntime:
        """Start a stream, around `pipeline` when one was built for it (a reload's), and register it."""
        rt = self._make(config, pipeline)
        rt.start()  # one that fails to start has stopped what it started, and is not added
        self._by_name = {**self._by_name, rt.name: rt}
        return rt

    def remove(self, names: set[str], deadline: float) -> None:
        """Stop these streams together, each worker finishing its frames by `deadline`."""
        stop_streams([rt for rt in self._by_name.values() if rt.name in names], deadline)
        self._by_name = {n: rt for n, rt in self._by_name.items() if n not in names}

    def vitals(self) -> tuple[CaptureVitals, ...]:
        return tuple(rt.vitals() for rt in self)

    def heartbeats(self) -> list[Heartbeat]:
        return [rt.worker.heartbeat for rt in self]

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
