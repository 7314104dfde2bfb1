"""An audio source that plays a file into the pipeline, like a microphone would."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable

import numpy as np

from voxnode.audio.format import PERIOD_FRAMES, PERIOD_S, SAMPLE_RATE
from voxnode.audio.frames import Frame
from voxnode.audio.ring import FrameRing
from voxnode.audio.source import AudioSource
from voxnode.audio.wavfile import float_to_s16
from voxnode.errors import AudioFileError

log = logging.getLogger(__name__)


class FileSource(AudioSource):
    """Feeds 16 kHz mono audio as 20 ms frames.

    realtime=True paces frames like a live device (and, like one, drops the
    oldest when the ring is full); realtime=False goes as fast as the consumer
    takes them and waits for room instead of dropping, since a file can wait.
    """

    def __init__(self, name: str, audio: np.ndarray | Iterable[np.ndarray], ring: FrameRing, realtime: bool = True):
        """`audio`: one array, or blocks of any size (AudioStream.blocks(): a long file is never whole in memory)."""
        super().__init__(name, ring)
        self._blocks = [audio] if isinstance(audio, np.ndarray) else audio
        self.realtime = realtime
        self.stats.granted = {"device": f"file:{name}", "rate": SAMPLE_RATE, "channels": 1}

    def _periods(self):
        """20 ms int16 periods from the blocks; the last one padded with silence."""
        carry = np.zeros(0, dtype=np.int16)
        for block in self._blocks:
            pcm = block if block.dtype == np.int16 else float_to_s16(block)
            pcm = np.concatenate((carry, pcm)) if carry.size else pcm
            whole = pcm.size - pcm.size % PERIOD_FRAMES
            for i in range(0, whole, PERIOD_FRAMES):
                yield pcm[i : i + PERIOD_FRAMES]
            carry = pcm[whole:]
        if carry.size:
            yield np.concatenate((carry, np.zeros(PERIOD_FRAMES - carry.size, dtype=np.int16)))

    def _run(self) -> None:
        self.stats.state = "running"
        t0_mono, t0_wall = time.monotonic(), time.time()
        periods = self._periods()
        seq = -1
        while True:
            try:
                chunk = next(periods, None)
            except AudioFileError as e:  # found while reading (a pipe went quiet, truncation): the file ends here
                self.stats.last_error = str(e)
                log.error("stream %s: %s", self.name, e, extra={"STREAM": self.name})
                break
            if self.stopping:
                return
            if chunk is None:
                break
            seq += 1
            offset = seq * PERIOD_S
            t = t0_mono + offset  # a file's timeline is exact
            frame = Frame(seq=seq, samples=chunk, t_mono=t, t_wall=t0_wall + offset, t_capture=t)
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
