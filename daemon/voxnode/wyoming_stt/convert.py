"""A Wyoming client's audio, in whatever format it declares, -> 16 kHz mono float32 for the pipeline.

Samples: unsigned 8-bit, signed 16/24/32-bit little-endian (Wyoming's `width` 1-4), any number of
channels (averaged to mono, as `voxnode transcribe` does with files), any rate, resampled with soxr
(the resampler audio/wavfile.py uses), streaming: a chunk is converted as it arrives, so the audio
is ready for partials while the client still talks, and the resampler keeps its state across
chunk boundaries.
"""

from __future__ import annotations

import numpy as np

from voxnode.audio.format import SAMPLE_RATE

MIN_RATE, MAX_RATE = 8000, 192000
MAX_CHANNELS = 16
WIDTHS = (1, 2, 3, 4)


class FormatError(ValueError):
    """The declared format is not one we can read; the message says which field and why."""


def check_format(rate: object, width: object, channels: object) -> tuple[int, int, int]:
    for name, value in (("rate", rate), ("width", width), ("channels", channels)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise FormatError(f"audio {name} must be an integer, got {value!r}")
    assert isinstance(rate, int) and isinstance(width, int) and isinstance(channels, int)
    if not MIN_RATE <= rate <= MAX_RATE:
        raise FormatError(f"audio rate {rate} Hz is outside {MIN_RATE}..{MAX_RATE}")
    if width not in WIDTHS:
        raise FormatError(f"audio width {width} bytes: only 1 (u8), 2, 3 or 4 (signed little-endian) are read")
    if not 1 <= channels <= MAX_CHANNELS:
        raise FormatError(f"audio channels {channels} is outside 1..{MAX_CHANNELS}")
    return rate, width, channels


class AudioConverter:
    def __init__(self, rate: int, width: int, channels: int):
        self.rate, self.width, self.channels = check_format(rate, width, channels)
        self._frame_bytes = width * channels
        self._carry = b""  # a sample frame split across two chunks
        self._resampler = None
        if rate != SAMPLE_RATE:
            import soxr

            self._resampler = soxr.ResampleStream(rate, SAMPLE_RATE, 1, dtype="float32", quality="HQ")

    def seconds(self, nbytes: int) -> float:
        """How long `nbytes` of the declared format last."""
        return nbytes / self._frame_bytes / self.rate

    def convert(self, data: bytes, last: bool = False) -> np.ndarray:
        """Bytes in the declared format -> float32 mono at 16 kHz in [-1, 1]; `last` flushes the resampler."""
        data = self._carry + data
        usable = len(data) - len(data) % self._frame_bytes
        self._carry = data[usable:]
        mono = _to_mono(_decode(data[:usable], self.width), self.channels)
        if self._resampler is not None:
            mono = self._resampler.resample_chunk(mono, last=last)
        return np.asarray(mono, dtype=np.float32)


def _decode(data: bytes, width: int) -> np.ndarray:
    if width == 1:
        return (np.frombuffer(data, dtype=np.uint8).astype(np.float32) - 128.0) / 128.0
    if width == 2:
        return np.frombuffer(data, dtype="<i2").astype(np.float32) / 32768.0
    if width == 3:
        b = np.frombuffer(data, dtype=np.uint8).reshape(-1, 3).astype(np.int32)
        v = b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)
        v = np.where(v & 0x800000, v - 0x1000000, v)
        return v.astype(np.float32) / 8388608.0
    return np.frombuffer(data, dtype="<i4").astype(np.float32) / 2147483648.0


def _to_mono(x: np.ndarray, channels: int) -> np.ndarray:
    if channels == 1:
        return np.ascontiguousarray(x, dtype=np.float32)
    return np.ascontiguousarray(x.reshape(-1, channels).mean(axis=1), dtype=np.float32)
