"""Which frames the wake-word detector may skip: those the VAD and the noise gate call silence.

In a quiet room nearly every frame is silence, and the detector (its front-end and one model call
per 30 ms per word) is what a closed gate spends its CPU on. After `hangover` frames of silence
the detector rests; the frames it would have heard are held (the latest `replay` of them) and
given to it first when a frame is speech again, so the beginning of the word, which the VAD
calls speech a little late, still reaches it, and its front-end's noise estimate sees the room
just before. Acceptance and idle CPU with and without: docs/benchmarks.md#wake-word.
"""

from __future__ import annotations

from collections import deque

import numpy as np

HANGOVER_FRAMES = 25  # 0.5 s of 20 ms frames: pauses inside a phrase keep the detector running
REPLAY_FRAMES = 25  # 0.5 s held while resting, replayed at the next speech


class SilenceSkip:
    def __init__(self, hangover_frames: int = HANGOVER_FRAMES, replay_frames: int = REPLAY_FRAMES):
        self.hangover = hangover_frames
        self._held: deque[np.ndarray] = deque(maxlen=max(1, replay_frames))
        self._quiet = 0  # silent frames in a row
        self.skipped = 0  # frames the detector never heard

    def frames(self, samples: np.ndarray, speech: bool) -> list[np.ndarray]:
        """This frame -> the frames to give the detector now, in order (none while it rests)."""
        if speech:
            self._quiet = 0
            if not self._held:
                return [samples]
            out = [*self._held, samples]
            self._held.clear()
            return out
        self._quiet += 1
        if self._quiet <= self.hangover:
            return [samples]
        if len(self._held) == self._held.maxlen:
            self.skipped += 1
        self._held.append(samples)
        return []
