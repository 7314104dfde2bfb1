"""A stream's echo reference (`echo_reference`): what the node plays, captured beside its microphone.

The reference is captured by the same code as the microphone (audio/alsa_capture.py: its own
thread, non-blocking open, backoff and retry) into its own ring; the stream's worker takes the
reference frame captured with each microphone frame from it (`ReferenceTap.take`, by capture time:
`Frame.t_capture`, from the frames each device has delivered, audio/stream_clock.py, so a capture
thread that reads late does not move the pairing), waiting at most WAIT_S for one that is due, and
only while the reference delivers. So a reference
that stops, never opens or falls behind costs the microphone nothing (the capture thread never
waits on it): its frames go to the echo canceller with silence as their reference, and the tap
says so (health: echo_reference "missing" or "late", with counts; the log, once per change).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import deque

import numpy as np

from voxnode.audio.alsa_capture import AlsaCapture
from voxnode.audio.format import PERIOD_S
from voxnode.audio.frames import Frame
from voxnode.audio.ring import FrameRing
from voxnode.config.audio import AudioConfig, StreamConfig

log = logging.getLogger(__name__)

# A reference frame that reaches the worker this long after the microphone frame it went with is
# stale: the reference's capture fell behind, by more than AEC3's delay estimator (about 0.5 s) could
# have followed had it been paired late; such frames are counted as late (health: "late").
MAX_LAG_S = 0.25
# The reference frame paired with a microphone frame was captured within this of it: at most half a
# period apart on two devices whose periods are out of step, plus the capture times' error (0.01 ms
# between two FIFO PCMs, tests/audio/test_echo_pairing.py). A frame captured further after the
# microphone's belongs to later audio (the reference opened after the microphone, or came back): the
# microphone frame gets silence. One captured further before belonged to an earlier microphone frame,
# which went without it (the reference's capture fell behind): it is passed over. (Paired by read
# times instead, with 30 ms ahead and MAX_LAG_S behind allowed, the pairing slid with the reads: the
# echo's paired delay came out 0 ms at load 14 and 493 ms once, true 60 ms.)
PAIR_S = 0.75 * PERIOD_S
# While the reference delivers, the worker waits this long for a frame that is due but not read
# yet (the two captures read their periods at slightly different moments); once one does not come,
# it does not wait again until the reference delivers: a dead reference never slows the stream.
# Measured: at 40 ms, 28 of 1121 frames went without their reference at load 9 on 2 cores (the
# reference's capture thread scheduled late); the wait holds the worker only, never the capture.
# A sound server's monitor (PulseAudio's through ALSA's pulse plugin) hands its 20 ms periods over in
# bursts every ~128 ms (gaps p90 120 ms, max 143 ms: tests/stream/test_system_echo_cancel.py's room):
# at 100 ms most microphone frames went without their reference, 126 of 147 with bursts of 7 periods
# (tests/audio/test_echo_pairing.py), so the canceller flapped; at 200 ms none after the first burst.
# Below MAX_LAG_S: a frame waited for longer would be stale anyway.
WAIT_S = 0.2
RING_S = 2.0  # the reference ring: beyond MAX_LAG_S it only holds what is dropped anyway
STARTUP_S = 3.0  # a reference without frames yet is "starting" this long after its capture started
STATE_HOLD_S = 1.0  # "missing"/"late" stay reported this long after the last such frame


class ReferenceCapture(AlsaCapture):
    """The capture of `stream.echo_reference` (mono: channel 0, or the plug layer's downmix)."""

    def __init__(self, stream: StreamConfig, audio: AudioConfig):
        ring = FrameRing(max(1, int(RING_S / PERIOD_S)))
        super().__init__(dataclasses.replace(stream, device=stream.echo_reference, channel=0, channels=0), audio, ring)
        self.name = f"{stream.name} echo_reference"
        self._thread.name = f"reference-{stream.name}"
        self.input_check = None  # what the node plays: silent whenever it plays nothing


class ReferenceTap:
    """Pairs microphone frames with reference frames by capture time, on the stream worker's thread."""

    def __init__(self, stream: str, source: AlsaCapture, clock=time.monotonic):
        self.stream = stream
        self.source = source
        self._clock = clock
        self._pending: deque[Frame] = deque()
        self.frames = 0  # reference frames given to the echo canceller
        self.missing_frames = 0  # microphone frames that had no reference frame
        self.late_frames = 0  # reference frames dropped as stale
        self._last_missing = -1e9
        self._last_late = -1e9
        self._reported = "starting"
        self._delivering = False  # the last take found its frame: the next may wait a little for one

    def take(self, t_capture: float) -> np.ndarray | None:
        """The reference frame for the microphone frame captured at `t_capture` (Frame.t_capture), or None."""
        ring = self.source.ring
        self._pending.extend(ring.get_batch(ring.capacity, timeout=0))
        self._pass_over(t_capture)
        if not self._pending and self._delivering:
            deadline = self._clock() + WAIT_S
            while not self._pending and (left := deadline - self._clock()) > 0:
                frames = ring.get_batch(ring.capacity, timeout=left)
                if not frames:
                    break  # timed out, or the reference's capture ended
                self._pending.extend(frames)
                self._pass_over(t_capture)  # a capture catching up: its older frames first
        self._delivering = bool(self._pending)
        if self._pending and self._pending[0].t_capture <= t_capture + PAIR_S:
            frame = self._pending.popleft()
            self.frames += 1
            self._report()
            return frame.samples
        self.missing_frames += 1
        self._last_missing = self._clock()
        self._report()
        return None

    def _pass_over(self, t_capture: float) -> None:
        """Drop the reference frames captured before the microphone frame's partner; count the stale ones."""
        pending = self._pending
        while pending and pending[0].t_capture < t_capture - PAIR_S:
            if pending.popleft().t_capture < t_capture - MAX_LAG_S:
                self.late_frames += 1
                self._last_late = self._clock()

    @property
    def state(self) -> str:
        """starting | ok | missing (no reference frames: not open, stopped, stalled) | late (stale frames)."""
        now, st = self._clock(), self.source.stats
        if self.frames == 0 and st.state in ("starting", "running") and now - self.source.started_mono < STARTUP_S:
            return "starting"  # opening, or open with its first frames not yet in
        if st.state != "running" or now - st.last_frame_mono > STATE_HOLD_S or now - self._last_missing < STATE_HOLD_S:
            return "missing"
        if now - self._last_late < STATE_HOLD_S:
            return "late"
        return "ok"

    def _report(self) -> None:
        state = self.state
        if state == self._reported:
            return
        was, self._reported = self._reported, state
        fields = {"STREAM": self.stream, "DEVICE": self.source.stream.device}
        if state in ("ok", "starting"):
            if state == "ok" and was != "starting":
                log.info("stream %s: echo reference %r is back", self.stream, self.source.stream.device, extra=fields)
            return
        why = self.source.stats.last_error or (
            "no frames from it" if state == "missing" else f"its frames arrive over {MAX_LAG_S:.2f} s late"
        )
        log.warning(
            "stream %s: echo reference %r is %s (%s); the microphone goes on without echo cancellation",
            self.stream,
            self.source.stream.device,
            state,
            why,
            extra=fields,
        )

    def snapshot(self) -> dict:
        st = self.source.stats
        return {
            "echo_reference": self.state,
            "echo_reference_missing_frames": self.missing_frames,
            "echo_reference_late_frames": self.late_frames,
            "echo_reference_error": st.last_error,
        }


def reference_tap(stream: StreamConfig, audio: AudioConfig) -> ReferenceTap | None:
    """The stream's echo reference capture and its tap, or None without `echo_reference`."""
    return ReferenceTap(stream.name, ReferenceCapture(stream, audio)) if stream.echo_reference else None
