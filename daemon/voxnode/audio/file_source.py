"""An audio source that plays a file into the pipeline, like a microphone would."""

from __future__ import annotations

import time

import numpy as np

from voxnode.audio.format import PERIOD_FRAMES, PERIOD_S, SAMPLE_RATE
from voxnode.audio.frames import Frame
from voxnode.audio.ring import FrameRing
from voxnode.audio.source import AudioSource
from voxnode.audio.wavfile import float_to_s16


class FileSource(AudioSource):
    """Feeds 16 kHz mono audio as 20 ms frames.

    realtime=True paces frames like a live device (and, like one, drops the
    oldest when the ring is full); realtime=False goes as fast as the consumer
    takes them and waits for room instead of dropping, since a file can wait.
    """

    def __init__(self, name: str, audio: np.ndarray, ring: FrameRing, realtime: bool = True):
        super().__init__(name, ring)
        pcm = audio if audio.dtype == np.int16 else float_to_s16(audio)
        pad = (-pcm.size) % PERIOD_FRAMES
        self._pcm = np.concatenate((pcm, np.zeros(pad, dtype=np.int16))) if pad else pcm
        self.realtime = realtime
        self.stats.granted = {"device": f"file:{name}", "rate": SAMPLE_RATE, "channels": 1}

    def _run(self) -> None:
        self.stats.state = "running"
        t0_mono, t0_wall = time.monotonic(), time.time()
        for seq in range(self._pcm.size // PERIOD_FRAMES):
            if self.stopping:
                return
            offset = seq * PERIOD_S
            chunk = self._pcm[seq * PERIOD_FRAMES : (seq + 1) * PERIOD_FRAMES]
            frame = Frame(seq=seq, samples=chunk, t_mono=t0_mono + offset, t_wall=t0_wall + offset)
            if self.realtime:
                # A frame exists only once its last sample has "arrived".
                wait = t0_mono + offset + PERIOD_S - time.monotonic()
                if wait > 0 and self._stop.wait(wait):
                    return
                self.ring.put(frame)
            elif not self.ring.put_wait(frame):
                return
            self.stats.frames += 1
            self.stats.last_frame_mono = time.monotonic()
        self.stats.state = "finished"
