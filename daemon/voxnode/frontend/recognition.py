"""What recognition hears, for audio that does not come through a stream's capture: `voxnode transcribe`
and the Wyoming server hand the engine the same audio `voxnode run` does (issue 22), so the offline
figures measure the daemon.

The front-end works in 20 ms frames and its output is `FrontEnd.latency_s` late (the denoiser's
look-ahead); `recognition_blocks` cuts any blocks into frames, runs them through the front-end
(recognition path only: no VAD), drops the leading latency and flushes the tail with silence, so
what comes out lines up sample for sample with what went in and is just as long.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from voxnode.audio.format import PERIOD_FRAMES, SAMPLE_RATE

from .chain import FrontEnd, FrontEndParams

_SCALE = np.float32(32768.0)


class RecognitionFilter:
    """Blocks of float32 [-1, 1] in, the front-end's recognition audio out (same scale), realigned.

    One instance per recording: the filters and the denoiser carry state from block to block."""

    def __init__(self, params: FrontEndParams):
        self._fe = FrontEnd(params, with_vad=False)
        self._pending = np.zeros(0, dtype=np.float32)  # int16 scale, less than a frame
        self._skip = round(self._fe.latency_s * SAMPLE_RATE)  # leading output samples: look-ahead
        self._owed = 0  # samples taken in and not yet given out

    def process(self, block: np.ndarray) -> np.ndarray:
        self._owed += len(block)
        y = self._run(np.asarray(block, dtype=np.float32) * _SCALE)
        self._owed -= len(y)
        return y

    def flush(self) -> np.ndarray:
        """The rest, pushed out with silence: afterwards as many samples came out as went in."""
        owed = self._owed
        pad = self._skip + owed + PERIOD_FRAMES  # enough frames for the partial one and the look-ahead
        y = self._run(np.zeros(pad, dtype=np.float32))[:owed]
        self._owed = 0
        return y

    def _run(self, x: np.ndarray) -> np.ndarray:
        x = np.concatenate([self._pending, x])
        whole = len(x) - len(x) % PERIOD_FRAMES
        self._pending = x[whole:]
        out = [self._fe.process(x[i : i + PERIOD_FRAMES], vad=False).samples for i in range(0, whole, PERIOD_FRAMES)]
        y = np.concatenate(out) if out else np.zeros(0, dtype=np.float32)
        if self._skip:
            cut = min(self._skip, len(y))
            y, self._skip = y[cut:], self._skip - cut
        return (y / _SCALE).astype(np.float32)


def recognition_blocks(params: FrontEndParams, blocks: Iterable[np.ndarray]) -> Iterator[np.ndarray]:
    """Every block through a fresh recognition path; as many samples come out as went in."""
    f = RecognitionFilter(params)
    for block in blocks:
        y = f.process(block)
        if y.size:
            yield y
    y = f.flush()
    if y.size:
        yield y


def recognition_audio(params: FrontEndParams, audio: np.ndarray) -> np.ndarray:
    """A whole recording (float32 [-1, 1]) through a fresh recognition path, same length."""
    parts = list(recognition_blocks(params, [audio]))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)
