"""The wake-word gate of one stream: what the segmenter (and so the recogniser) may hear.

States: CLOSED (frames go to the detector only) -> the wake word -> LISTENING (frames go on to the
segmenter; `listen_timeout` to start speaking) -> speech starts -> ACTIVE -> the utterance ends
(endpoint, maximum length, end of stream) -> CLOSED. An utterance too short to keep (a click)
goes back to LISTENING with the time that was left. One wake word opens one utterance: a long
one cut at `stream.max_utterance_ms` ends the session with its first part, so a false wake next
to a television costs at most one utterance.

The frame in which the word is detected is not passed on; the detector fires 100-200 ms after the
word ends (measured on espeak-ng clips for okay_nabu and alexa: 140 ms), so the word itself stays
out of the transcript and a command said without a pause loses at most that much of its start.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from voxnode.wake.detector import WakeDetector
from voxnode.wake.models import WakeModel

from .segmenter import Discarded, Ended, SegmentEvent, Started


class GateState(enum.Enum):
    CLOSED = "closed"
    LISTENING = "listening"
    ACTIVE = "active"


@dataclass(frozen=True)
class WakeParams:
    """Built from [wake] and the stream's `wake` key (stream/params.py)."""

    model: WakeModel
    listen_timeout_frames: int
    refractory_ms: int


class WakeGate:
    def __init__(self, params: WakeParams, detector: WakeDetector | None = None):
        self.params = params
        self.detector = detector or WakeDetector(params.model, params.refractory_ms)
        self.state = GateState.CLOSED
        self._frames_left = 0
        self.detections = 0
        self.timeouts = 0

    @property
    def word(self) -> str:
        return self.params.model.name

    @property
    def open(self) -> bool:
        return self.state is not GateState.CLOSED

    def hear(self, samples: np.ndarray) -> float | None:
        """Every frame, gate open or not (the detector's state follows the audio). Returns the
        probability when the wake word opens the gate with this frame."""
        p = self.detector.process(samples)
        if p is None or self.state is not GateState.CLOSED:
            return None  # a wake word said during a session is part of what is being said
        self.state = GateState.LISTENING
        self._frames_left = self.params.listen_timeout_frames
        self.detections += 1
        return p

    def follow(self, event: SegmentEvent) -> None:
        """The segmenter's events, in order."""
        if isinstance(event, Started) and self.state is GateState.LISTENING:
            self.state = GateState.ACTIVE
        elif isinstance(event, Discarded) and self.state is GateState.ACTIVE:
            self.state = GateState.LISTENING if self._frames_left > 0 else GateState.CLOSED
        elif isinstance(event, Ended):
            self.state = GateState.CLOSED

    def tick(self) -> bool:
        """After each frame the gate let through; True when listening just timed out."""
        if self.state is not GateState.LISTENING:
            return False
        self._frames_left -= 1
        if self._frames_left > 0:
            return False
        self.state = GateState.CLOSED
        self.timeouts += 1
        return True
