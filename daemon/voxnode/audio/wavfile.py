"""Reading audio files into 16 kHz mono float32.

The stdlib `wave` module in Python 3.11 reads only integer PCM and rejects
WAVE_FORMAT_EXTENSIBLE and float files, which many recorders write, so we
walk the RIFF chunks ourselves; that also lets us say precisely what is wrong
with a truncated or corrupt file. Resampling uses soxr (a maintained,
band-limited resampler) because naive interpolation aliases.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from voxnode.audio.format import SAMPLE_RATE
from voxnode.errors import AudioFileError

_PCM, _FLOAT, _EXTENSIBLE = 1, 3, 0xFFFE


@dataclass(frozen=True)
class WavInfo:
    rate: int
    channels: int
    bits: int
    float_samples: bool
    frames: int


def read_audio(path: str | Path, raw: bool = False) -> np.ndarray:
    """Any WAV (or raw S16_LE 16 kHz mono with `raw=True`) -> float32 mono 16 kHz in [-1, 1]."""
    path = Path(path)
    data = _read_bytes(path)
    if raw:
        return decode_raw(data, str(path))
    samples, rate = decode_wav(data, str(path))
    return to_mono_16k(samples, rate)


def _read_bytes(path: Path) -> bytes:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise AudioFileError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise AudioFileError(f"{path}: is a directory, not an audio file") from None
    except PermissionError:
        raise AudioFileError(f"{path}: permission denied") from None
    if not data:
        raise AudioFileError(f"{path}: file is empty")
    return data


def decode_raw(data: bytes, name: str) -> np.ndarray:
    if len(data) % 2:
        raise AudioFileError(f"{name}: raw S16_LE data has an odd number of bytes ({len(data)}); truncated?")
    return np.frombuffer(data, dtype="<i2").astype(np.float32) / 32768.0


def decode_wav(data: bytes, name: str) -> tuple[np.ndarray, int]:
    """WAV bytes -> (float32 array [frames, channels], rate)."""
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        kind = "empty" if not data else "not a WAV file (no RIFF/WAVE header)"
        raise AudioFileError(f"{name}: {kind}; use --raw for headerless S16_LE 16 kHz audio")
    fmt = None
    pos = 12
    while pos + 8 <= len(data):
        cid, size = struct.unpack_from("<4sI", data, pos)
        body = data[pos + 8 : pos + 8 + size]
        if cid == b"fmt ":
            fmt = _parse_fmt(body, name)
        elif cid == b"data":
            if fmt is None:
                raise AudioFileError(f"{name}: corrupt WAV: data chunk before fmt chunk")
            # Recorders killed mid-write leave the header's size too big; say so. A streaming
            # recorder's placeholder size (0 or 0xFFFFFFFF) is no promise: keep what is there.
            if len(body) < size and size not in (0xFFFFFFFF, 0):
                raise AudioFileError(
                    f"{name}: truncated WAV: header promises {size} bytes of audio, file has {len(body)}"
                )
            return _samples(body, fmt, name), fmt.rate
        pos += 8 + size + (size & 1)
    if fmt is None:
        raise AudioFileError(f"{name}: corrupt WAV: no fmt chunk")
    raise AudioFileError(f"{name}: corrupt or truncated WAV: no data chunk")


def _parse_fmt(body: bytes, name: str) -> WavInfo:
    if len(body) < 16:
        raise AudioFileError(f"{name}: corrupt WAV: fmt chunk is {len(body)} bytes")
    tag, channels, rate, _, block, bits = struct.unpack_from("<HHIIHH", body)
    if tag == _EXTENSIBLE and len(body) >= 26:
        tag = struct.unpack_from("<H", body, 24)[0]
    if tag not in (_PCM, _FLOAT):
        raise AudioFileError(f"{name}: unsupported WAV encoding (format tag {tag:#x}); only PCM and float are read")
    if channels < 1 or rate < 1000 or rate > 384000:
        raise AudioFileError(f"{name}: corrupt WAV: {channels} channels at {rate} Hz")
    if (tag == _PCM and bits not in (8, 16, 24, 32)) or (tag == _FLOAT and bits not in (32, 64)):
        raise AudioFileError(f"{name}: unsupported WAV sample size: {bits} bits")
    if block != channels * bits // 8:
        raise AudioFileError(f"{name}: corrupt WAV: block size {block} does not match {channels} x {bits} bits")
    return WavInfo(rate=rate, channels=channels, bits=bits, float_samples=tag == _FLOAT, frames=0)


def _samples(body: bytes, fmt: WavInfo, name: str) -> np.ndarray:
    width = fmt.bits // 8
    usable = len(body) - len(body) % (width * fmt.channels)
    body = body[:usable]
    if not body:
        raise AudioFileError(f"{name}: WAV has no audio samples")
    if fmt.float_samples:
        x = np.frombuffer(body, dtype="<f4" if width == 4 else "<f8").astype(np.float32)
    elif width == 1:
        x = (np.frombuffer(body, dtype=np.uint8).astype(np.float32) - 128.0) / 128.0
    elif width == 2:
        x = np.frombuffer(body, dtype="<i2").astype(np.float32) / 32768.0
    elif width == 3:
        b = np.frombuffer(body, dtype=np.uint8).reshape(-1, 3).astype(np.int32)
        v = b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)
        v = np.where(v & 0x800000, v - 0x1000000, v)
        x = v.astype(np.float32) / 8388608.0
    else:
        x = np.frombuffer(body, dtype="<i4").astype(np.float32) / 2147483648.0
    return x.reshape(-1, fmt.channels)


def to_mono_16k(samples: np.ndarray, rate: int) -> np.ndarray:
    """[frames, channels] float32 at `rate` -> mono float32 at 16 kHz."""
    mono = samples.mean(axis=1) if samples.ndim == 2 else samples
    mono = np.ascontiguousarray(mono, dtype=np.float32)
    if rate != SAMPLE_RATE:
        import soxr

        mono = soxr.resample(mono, rate, SAMPLE_RATE, quality="HQ").astype(np.float32)
    return mono


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
