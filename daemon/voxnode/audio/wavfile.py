"""Reading audio files into 16 kHz mono float32.

The stdlib `wave` module in Python 3.11 reads only integer PCM and rejects
WAVE_FORMAT_EXTENSIBLE and float files, which many recorders write, so we
walk the RIFF chunks ourselves (audio_stream.py, block by block); that also lets
us say precisely what is wrong with a truncated or corrupt file. Resampling uses
soxr (a maintained, band-limited resampler) because naive interpolation aliases.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from voxnode.audio.audio_stream import AudioStream
from voxnode.audio.format import SAMPLE_RATE

# Whole files in memory (demo clips, `run --file`'s tests, benchmarks): 1 h is 230 MB of float32.
# `voxnode transcribe` streams instead (AudioStream.blocks) and allows longer input.
READ_ALL_MAX_SECONDS = 3600.0


def read_audio(path: str | Path, raw: bool = False, max_seconds: float = READ_ALL_MAX_SECONDS) -> np.ndarray:
    """Any WAV (or raw S16_LE 16 kHz mono with `raw=True`) -> float32 mono 16 kHz in [-1, 1]."""
    with AudioStream(path, raw=raw, max_seconds=max_seconds) as stream:
        return stream.read_all()


def float_to_s16(audio: np.ndarray) -> np.ndarray:
    return (np.clip(audio, -1.0, 32767 / 32768) * 32768.0).round().astype(np.int16)


def write_wav(path: str | Path, audio: np.ndarray, rate: int = SAMPLE_RATE) -> None:
    """Write mono int16 or float audio as a 16-bit PCM WAV (tests, demos, debugging)."""
    import wave

    pcm = audio if audio.dtype == np.int16 else float_to_s16(audio)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm.astype("<i2").tobytes())
