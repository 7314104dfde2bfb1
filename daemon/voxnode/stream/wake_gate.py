"""The wake-word gate of one stream: what the segmenter (and so the recogniser) may hear.

States: CLOSED (frames go to the detector only) -> the wake word -> LISTENING (frames go on to the
segmenter; `listen_timeout` to start speaking) -> speech starts -> ACTIVE -> the utterance ends
(endpoint, maximum length, end of stream) -> CLOSED. An utterance too short to keep (a click)
goes back to LISTENING with the time that was left. One wake word opens one utterance: a long
one cut at `stream.max_utterance_ms` ends the session with its first part, so a false wake next
to a television costs at most one utterance.

Follow-up (`wake.follow_up_s`, Home Assistant's switch): an utterance that reached its endpoint
leaves the gate LISTENING for the follow-up window instead of CLOSED; the next utterance, if it
starts in time, is transcribed without the wake word (its events say `follow_up`), and opens the
window again. Silence through the window closes it. The wake word said at the start of a
follow-up (while listening, or in an utterance's first WAKE_RESTART_FRAMES) starts a fresh wake
session instead, so "okay nabu, ..." said out of habit is not transcribed with the word in it.

The frame in which the word is detected is not passed on; the detector fires 100-200 ms after the
word ends (measured on espeak-ng clips for okay_nabu and alexa: 140 ms), so the word itself stays
out of the transcript and a command said without a pause loses at most that much of its start.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from voxnode.wake.confirm import SecondOpinion
from voxnode.wake.detector import WakeDetector
from voxnode.wake.models import WakeModel
from voxnode.wake.silence import SilenceSkip

from .segmenter import Discarded, Ended, SegmentEvent, Started

# 2 s of 20 ms frames (the utterance's pre-roll included): a wake word heard later in a follow-up
# utterance is part of what is being said, as in any session.
WAKE_RESTART_FRAMES = 100


class GateState(enum.Enum):
    CLOSED = "closed"
    LISTENING = "listening"
    ACTIVE = "active"


@dataclass(frozen=True)
class WakeParams:
    """Built from [wake] and the stream's `wake` key (stream/params.py)."""

    models: tuple[WakeModel, ...]  # listened for at once; events name the one heard
    listen_timeout_frames: int
    refractory_ms: int
    follow_up_frames: int = 0  # the follow-up window, when follow-up is on
    follow_up: bool = False  # on at start (wake.follow_up_s > 0); the switch changes it at run time
    skip_silence: bool = True  # the detector rests on silence while the gate is closed (wake/silence.py)
    second_opinion: bool = False  # wake.confirm = "openwakeword": alexa's second opinion (wake/confirm.py)
    # The models whose detections Whisper checks before they count (wake.confirm "whisper", or "auto" for
    # alexa: wake/whisper_check.py; the pipeline's stream/wake_check.py holds the session meanwhile).
    checked: frozenset[str] = frozenset()


class WakeGate:
    def __init__(self, params: WakeParams, detector: WakeDetector | None = None):
        self.params = params
        second = SecondOpinion() if params.second_opinion and detector is None else None
        self.detector = detector or WakeDetector(params.models, params.refractory_ms, second=second)
        self._skip = SilenceSkip() if params.skip_silence else None
        self.state = GateState.CLOSED
        self._frames_left = 0
        self.detections = 0
        self.timeouts = 0  # wake sessions in which nobody spoke (follow-up windows that end are not)
        # The Home Assistant switch: set from the daemon's main thread, read here on the stream's.
        self.follow_up = params.follow_up
        self.in_follow_up = False  # the session was opened by a final, not by the wake word

    @property
    def heard(self) -> WakeModel:
        """The model whose word opened the current (or last) session."""
        return self.detector.heard

    @property
    def word(self) -> str:
        return self.heard.name

    @property
    def skipped(self) -> int:
        """Frames the detector did not hear (silence while closed)."""
        return self._skip.skipped if self._skip is not None else 0

    @property
    def open(self) -> bool:
        return self.state is not GateState.CLOSED

    def hear(self, samples: np.ndarray, utterance_frames: int = 0, speech: bool = True) -> float | None:
        """Every frame, gate open or not (the detector's state follows the audio; while the gate is
        closed it may rest on silence). Returns the probability when a wake word opens the gate (a
        fresh session) with this frame. `utterance_frames`: the length of the utterance under way,
        if any; `speech`: the front-end's verdict on the frame (VAD and noise gate)."""
        if self._skip is None:
            p = self.detector.process(samples)
        else:
            p = None
            for frame in self._skip.frames(samples, speech or self.state is not GateState.CLOSED):
                q = self.detector.process(frame)
                p = p if q is None else q
        if p is None:
            return None
        closed = self.state is GateState.CLOSED
        if not closed and not (self.in_follow_up and utterance_frames <= WAKE_RESTART_FRAMES):
            return None  # a wake word said during a session is part of what is being said
        self.state = GateState.LISTENING
        self._frames_left = self.params.listen_timeout_frames
        self.in_follow_up = False
        self.detections += 1
        return p

    def follow(self, event: SegmentEvent) -> None:
        """The segmenter's events, in order."""
        if isinstance(event, Started) and self.state is GateState.LISTENING:
            self.state = GateState.ACTIVE
        elif isinstance(event, Discarded) and self.state is GateState.ACTIVE:
            if self._frames_left > 0:
                self._listen(self._frames_left)
            else:
                self._close()
        elif isinstance(event, Ended):
            # Only an utterance that reached its endpoint opens a follow-up: one cut at its maximum
            # length ends the session (the television case above).
            frames = self.params.follow_up_frames
            if event.reason == "endpoint" and self.follow_up and frames > 0:
                self._listen(frames)
                self.in_follow_up = True
            else:
                self._close()

    def reject(self) -> None:
        """The word just detected was not heard by the recogniser (wake.confirm; stream/wake_check.py): the
        gate closes as if it had not been said."""
        self._close()

    def _listen(self, frames: int) -> None:
        self.state = GateState.LISTENING
        self._frames_left = frames

    def _close(self) -> None:
        self.state = GateState.CLOSED
        self.in_follow_up = False

    def tick(self) -> bool:
        """After each frame the gate let through; True when listening just timed out."""
        if self.state is not GateState.LISTENING:
            return False
        self._frames_left -= 1
        if self.in_follow_up and not self.follow_up:
            self._frames_left = 0  # the switch turned follow-up off: the open window closes
        if self._frames_left > 0:
            return False
        self.timeouts += not self.in_follow_up  # a follow-up window ending in silence is its normal end
        self._close()
        return True
