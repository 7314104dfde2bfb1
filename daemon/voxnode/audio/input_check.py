"""What a microphone's own samples say about how it is set: digital silence and clipping.

Two settings outside voxnode break recognition without any error: a capture switched off or at 0 in
the mixer (alsamixer's capture view, a USB microphone's mute button, a HAT's wrong `audio.channel`),
which hands over exact zeros, and a capture gain so high that speech hits full scale, which Whisper
hears as distortion and loses words to. Both show in the samples, so the capture checks every frame
(three numpy passes over 320 samples: 5.4 us a frame here, 0.03 % of a core) and says so in the log,
in health (`input`, `silent_s`, `clipped_frames` per stream), in Prometheus, in Home Assistant's
Capture problem and in `voxnode fleet`.

A real microphone always has some noise (its own, the room's: -90 dBFS and up), so a run of frames
whose every sample is 0 is a switch, not a quiet room. A device with a noise gate of its own may
give zeros in a quiet room too; hence a minute before it is called silent.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from voxnode.audio.format import PERIOD_S

log = logging.getLogger(__name__)

SILENT_S = 60.0  # exact zeros this long: the microphone is called silent (muted, switched off, empty channel)
FULL_SCALE = 32767  # |sample| at or above it: clipped (int16 runs from -32768 to 32767)
CLIP_BLOCK_S = 60.0  # clipping is judged per block of this much audio
# Frames (20 ms) with a clipped sample in one block that call the input clipping: 0.2 s of clipped audio
# a minute is speech hitting full scale again and again, not one slammed door.
CLIP_FRAMES = 10
CLIP_CLEAR_BLOCKS = 10  # blocks in a row under CLIP_FRAMES before it is called fine again (no flapping)

_SILENT_FRAMES = round(SILENT_S / PERIOD_S)
_BLOCK_FRAMES = round(CLIP_BLOCK_S / PERIOD_S)


@dataclass
class InputFigures:
    input: str = "ok"  # ok | silent | clipping
    silent_s: float = 0.0  # the current run of digital silence
    clipped_frames: int = 0  # frames with a sample at full scale, since start

    def snapshot(self) -> dict:
        return {"input": self.input, "silent_s": round(self.silent_s, 1), "clipped_frames": self.clipped_frames}


class InputCheck:
    """Fed every frame of one microphone (its capture thread); `figures` is read by health."""

    def __init__(self, stream: str):
        self.stream = stream
        self.figures = InputFigures()
        self._zero_frames = 0
        self._silent = False
        self._block_frames = 0
        self._block_clipped = 0
        self._clipping = False
        self._clean_blocks = 0

    def feed(self, samples: np.ndarray) -> None:
        if samples.any():
            if self._silent:
                self._silent = False
                log.info(
                    "stream %s: the microphone gives sound again (after %.0f s of digital silence)",
                    self.stream,
                    self._zero_frames * PERIOD_S,
                    extra={"STREAM": self.stream},
                )
            self._zero_frames = 0
        else:
            self._zero_frames += 1
            if self._zero_frames == _SILENT_FRAMES:
                self._silent = True
                log.warning(
                    "stream %s: the microphone has given digital silence (every sample 0) for %.0f s: its capture "
                    "is muted, switched off or at 0 (alsamixer: F4 shows the capture controls; a mute button), "
                    "or audio.channel names a channel with nothing on it",
                    self.stream,
                    SILENT_S,
                    extra={"STREAM": self.stream},
                )
        clipped = bool(samples.max(initial=0) >= FULL_SCALE or samples.min(initial=0) <= -FULL_SCALE)
        self.figures.clipped_frames += clipped
        self._block_clipped += clipped
        self._block_frames += 1
        if self._block_frames == _BLOCK_FRAMES:
            self._judge_block()
        f = self.figures
        f.silent_s = self._zero_frames * PERIOD_S
        f.input = "silent" if self._silent else "clipping" if self._clipping else "ok"

    def _judge_block(self) -> None:
        clipped, self._block_clipped, self._block_frames = self._block_clipped, 0, 0
        if clipped >= CLIP_FRAMES:
            self._clean_blocks = 0
            if not self._clipping:
                self._clipping = True
                log.warning(
                    "stream %s: the input clips (%d of %d frames at full scale in the last %.0f s): lower the "
                    "capture gain (alsamixer, F4); clipped speech loses words",
                    self.stream,
                    clipped,
                    _BLOCK_FRAMES,
                    CLIP_BLOCK_S,
                    extra={"STREAM": self.stream},
                )
        elif self._clipping:
            self._clean_blocks += 1
            if self._clean_blocks == CLIP_CLEAR_BLOCKS:
                self._clipping = False
                log.info(
                    "stream %s: the input no longer clips (%.0f min without)",
                    self.stream,
                    CLIP_CLEAR_BLOCKS * CLIP_BLOCK_S / 60,
                    extra={"STREAM": self.stream},
                )
