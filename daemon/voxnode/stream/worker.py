"""One stream's consumer thread: frames from the capture ring -> sound levels and the speech pipeline."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable

import numpy as np

from voxnode.audio.capture_pace import CapturePace
from voxnode.audio.echo_reference import ReferenceTap
from voxnode.audio.format import PERIOD_S
from voxnode.audio.levels import LevelMeter, LevelReport
from voxnode.audio.ring import FrameRing
from voxnode.heartbeat import Heartbeat
from voxnode.lifecycle import Component
from voxnode.threads import NamedThread

from .pipeline import StreamPipeline

log = logging.getLogger(__name__)

# A stream worker in silence takes its frames IDLE_BATCH at a time (200 ms: speech onsets are
# seen up to that much later, endpoints and finals not at all); at most MAX_BATCH per wake-up.
# Each wake-up costs far more than the frames' signal work (cold caches): measured per thread, one
# idle stream on the shared 2-core x86 (load 12-15), the worker took 0.56-0.69 % of a core at 5
# frames (100 ms) and 0.44-0.47 % at 10 (issue 23). With a wake word the gate listens in
# "silence" too: IDLE_BATCH_WAKE keeps its word's event within 100 ms of the frames, as before.
IDLE_BATCH = 10
IDLE_BATCH_WAKE = 5
MAX_BATCH = 50
# While it batches, the worker lets its capture hold the audio (audio/capture_pace.py) so that no
# frame reaches it later than one waiting in the ring for its batch: (batch - 1) periods, 180 ms; a
# held frame waits the hold and the period the capture's last read of a drain waits for. So the
# hold is (batch - 2) periods: 160 ms, 60 ms with a wake word. The capture then wakes a few times a
# second instead of 50 (issue 23, fourth pass).


class StreamWorker(Component):
    """Consumes one stream's ring until it is closed, then flushes the utterance in flight.

    Started before its source and stopped after it (StreamRuntime): the source closes the ring, and
    the worker then finishes the frames it holds and the utterance in flight."""

    def __init__(
        self,
        name: str,
        ring: FrameRing,
        pipeline: StreamPipeline,
        emit: Callable[[LevelReport], None],
        levels: bool = False,
        is_muted: Callable[[str], bool] = lambda _name: False,
        reference: ReferenceTap | None = None,
        pace: CapturePace | None = None,
    ):
        self.name = name
        self.ring = ring
        self.pipeline = pipeline
        self.emit = emit  # level reports (the pipeline emits transcripts itself)
        self.levels = levels
        self.is_muted = is_muted
        self.reference = reference  # the echo reference's frames, paired with the microphone's
        self.pace = pace  # its capture's: relaxed while the pipeline is idle, hurried once it is not
        self.heartbeat = Heartbeat(f"stream-{name}")
        self._thread = NamedThread(target=self._run, name=f"stream-{name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self, deadline: float) -> None:
        """Let the frames and the utterance in flight finish by `deadline`. The ring is closed first
        (its source has closed it already, unless the source never started)."""
        self.ring.close()
        self._thread.join(max(0.0, deadline - time.monotonic()))
        # Still running with nothing heard (a deadline already past): it ends at once, nothing is lost.
        if self._thread.is_alive() and (not self.pipeline.idle or self.ring.depth):
            log.warning(
                "stream %s: worker did not finish in time; an utterance it held is lost",
                self.name,
                extra={"STREAM": self.name},
            )

    def _run(self) -> None:
        meter = LevelMeter(self.name) if self.levels else None
        silence = None
        ring, pace = self.ring, self.pace
        hold_s = 0.0  # what the capture was last told it may hold
        while True:
            # In silence, wake once per IDLE_BATCH frames instead of once per frame (the wake-up,
            # not the signal work, is most of the idle CPU); once speech starts, every frame is
            # handled as it arrives, so endpoints and finals are not delayed.
            pipeline = self.pipeline
            want = (IDLE_BATCH if pipeline.wake is None else IDLE_BATCH_WAKE) if pipeline.idle else 1
            if pace is not None and max(0, want - 2) * PERIOD_S != hold_s:
                hold_s = max(0, want - 2) * PERIOD_S
                if hold_s > 0:
                    pace.relax(hold_s)
                else:
                    pace.hurry()
            frames = ring.get_batch(MAX_BATCH, want, timeout=0.5)
            if not frames:
                if ring.closed:
                    break
                continue
            with self.heartbeat.busy():
                for frame in frames:
                    if self.is_muted(self.name):
                        # A muted microphone hears silence: speech before the mute still ends
                        # and gets its final, nothing said after it is transcribed or measured.
                        if silence is None or silence.shape != frame.samples.shape:
                            silence = np.zeros_like(frame.samples)
                        frame = dataclasses.replace(frame, samples=silence)
                    report = meter.add(frame) if meter is not None else None
                    if report is not None:
                        self.emit(report)
                    ref = self.reference.take(frame.t_capture) if self.reference is not None else None
                    self.pipeline.feed(frame.samples, frame.seq, frame.t_mono, frame.t_wall, ref)
        with self.heartbeat.busy():
            self.pipeline.flush()  # the utterance in flight (or a file's last one) still gets its final
