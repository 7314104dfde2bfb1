"""Reading an audio file as a stream of 16 kHz mono float32 blocks: bounded memory, whatever the input.

Reading a file whole let `voxnode transcribe /dev/zero` reach 7.3 GB RSS in 20 s
(issue 11). Here:
- character and block devices and sockets are refused (they are not recordings);
- FIFOs and pipes (`cat a.wav | voxnode transcribe /dev/stdin`) are read with a
  timeout: no writer, or a writer that stops sending, is an error, not a hang;
- the WAV header is parsed from the stream, then the samples come one block at
  a time (resampled with soxr's streaming resampler), so memory does not grow
  with the file;
- the audio length is bounded (`max_seconds`): checked from the header or the
  file size before anything is decoded where they are known, else while reading.
"""

from __future__ import annotations

import os
import select
import stat
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from voxnode.audio.format import SAMPLE_RATE
from voxnode.errors import AudioFileError

MAX_SECONDS = 4 * 3600.0  # a long meeting; beyond this an input is more likely a mistake (a device, a loop)
PIPE_TIMEOUT_S = 10.0  # a FIFO with no writer, or a writer that went quiet, gives up after this
BLOCK_SECONDS = 10.0  # decoded per step: ~0.6 MB of float32 at 16 kHz, a few MB of 48 kHz stereo input
MAX_FMT_BYTES = 1024  # a fmt chunk is 16-40 bytes; a bigger one is corruption, not a format
STREAMING_SIZES = (0, 0xFFFFFFFF)  # what recorders writing to a pipe put in the data size

_PCM, _FLOAT, _EXTENSIBLE = 1, 3, 0xFFFE
STDIN_NAMES = ("/dev/stdin", "/dev/fd/0", "/proc/self/fd/0")


@dataclass(frozen=True)
class WavFormat:
    rate: int
    channels: int
    bits: int
    float_samples: bool

    @property
    def block_align(self) -> int:
        return self.channels * self.bits // 8


RAW_FORMAT = WavFormat(rate=SAMPLE_RATE, channels=1, bits=16, float_samples=False)


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds:.0f} s"


class _Input:
    """A regular file, or a FIFO/pipe read with a timeout. Devices and sockets are refused."""

    def __init__(self, path: Path, timeout_s: float):
        self.name = str(path)
        self.timeout_s = timeout_s
        try:
            st = os.stat(path)
        except FileNotFoundError:
            # `voxnode transcribe -` (the usual name for standard input) said only "-: no such file".
            stdin = " (standard input is /dev/stdin)" if str(path) == "-" else ""
            raise AudioFileError(f"{path}: no such file{stdin}") from None
        except PermissionError:
            raise AudioFileError(f"{path}: permission denied") from None
        except OSError as e:
            raise AudioFileError(f"{path}: {e.strerror or e}") from None
        mode = st.st_mode
        if stat.S_ISDIR(mode):
            raise AudioFileError(f"{path}: is a directory, not an audio file")
        if (stat.S_ISCHR(mode) or stat.S_ISBLK(mode)) and str(path) in STDIN_NAMES:
            # `voxnode transcribe /dev/stdin < /dev/null` was told to use /dev/stdin.
            raise AudioFileError(
                f"{path}: standard input is {os.path.realpath(path)}, a device, not audio; "
                "redirect a file into it (< clip.wav) or pipe one (cat clip.wav |)"
            )
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
            raise AudioFileError(
                f"{path}: is a device, not an audio file (record from a microphone with "
                "`voxnode run`; pipe audio in through a FIFO or /dev/stdin)"
            )
        if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
            raise AudioFileError(f"{path}: is not a regular file or a FIFO")
        self.pipe = stat.S_ISFIFO(mode)
        try:
            # O_NONBLOCK: opening a FIFO without a writer would block for ever; poll() waits instead.
            self.fd = os.open(path, os.O_RDONLY | (os.O_NONBLOCK if self.pipe else 0))
        except PermissionError:
            raise AudioFileError(f"{path}: permission denied") from None
        except OSError as e:
            raise AudioFileError(f"{path}: {e.strerror or e}") from None
        self.size = None if self.pipe else st.st_size
        self.pos = 0
        self._poll = None
        if self.pipe:
            self._poll = select.poll()
            self._poll.register(self.fd, select.POLLIN)

    def read(self, n: int) -> bytes:
        """Up to n bytes; b"" at the end."""
        # Before any writer connects poll() reports nothing (and read() would say EOF): wait.
        if self._poll is not None and not self._poll.poll(self.timeout_s * 1000):
            where = "no writer connected" if self.pos == 0 else f"no data after {self.pos} bytes"
            raise AudioFileError(
                f"{self.name}: {where} within {self.timeout_s:.0f} s (a FIFO or pipe is "
                "read until its writer closes it)"
            )
        try:
            data = os.read(self.fd, n)
        except BlockingIOError:
            return self.read(n)  # woken without data (a writer connected and wrote nothing yet)
        except OSError as e:
            raise AudioFileError(f"{self.name}: read error after {self.pos} bytes: {e.strerror or e}") from None
        self.pos += len(data)
        return data

    def read_exact(self, n: int) -> bytes:
        parts, got = [], 0
        while got < n:
            b = self.read(n - got)
            if not b:
                break
            parts.append(b)
            got += len(b)
        return b"".join(parts)

    def head(self, n: int) -> bytes:
        """The first n bytes of a regular file, without moving; b"" for a pipe (it cannot be read twice)."""
        return b"" if self.pipe else os.pread(self.fd, n, 0)

    def skip(self, n: int) -> int:
        """Skip n bytes (a chunk we do not need); returns how many there were."""
        if self.size is not None:  # not a pipe
            n = max(0, min(n, self.size - self.pos))
            os.lseek(self.fd, n, os.SEEK_CUR)
            self.pos += n
            return n
        done = 0
        while done < n:
            b = self.read(min(n - done, 1 << 16))
            if not b:
                break
            done += len(b)
        return done

    @property
    def remaining(self) -> int | None:
        return None if self.size is None else self.size - self.pos

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class AudioStream:
    """One input file, header checked on open; `blocks()` yields 16 kHz mono float32 arrays."""

    def __init__(
        self,
        path: str | Path,
        raw: bool = False,
        *,
        max_seconds: float = MAX_SECONDS,
        timeout_s: float = PIPE_TIMEOUT_S,
        raw_hint: str = "",
    ):
        """`raw_hint`: how the caller's user gives headerless audio instead, added to "not a WAV file"
        (`voxnode transcribe` has --raw, `voxnode run --file` a .raw name, the demo neither)."""
        if path == "":  # Path("") is ".": `transcribe ""` said ".: is a directory"
            raise AudioFileError('"": the file name is empty')
        self.path = Path(path)
        self.raw_hint = raw_hint
        self.name = str(path)
        self.max_seconds = max_seconds
        self.raw = raw
        self._in = _Input(self.path, timeout_s)
        try:
            self.format, self.data_bytes = (RAW_FORMAT, None) if raw else self._read_header()
            self._check_size(raw)
        except BaseException:
            self._in.close()
            raise

    # ---- header -----------------------------------------------------------------------------

    def _read_header(self) -> tuple[WavFormat, int | None]:
        head = self._in.read_exact(12)
        if not head:
            raise AudioFileError(f"{self.name}: file is empty")
        if len(head) < 12 or head[:4] != b"RIFF" or head[8:12] != b"WAVE":
            hint = f"; {self.raw_hint}" if self.raw_hint else ""
            raise AudioFileError(f"{self.name}: not a WAV file (no RIFF/WAVE header){hint}")
        fmt = None
        while True:
            header = self._in.read_exact(8)
            if len(header) < 8:
                if fmt is None:
                    raise AudioFileError(f"{self.name}: corrupt WAV: no fmt chunk")
                raise AudioFileError(f"{self.name}: corrupt or truncated WAV: no data chunk")
            cid, size = struct.unpack("<4sI", header)
            if cid == b"fmt ":
                if size > MAX_FMT_BYTES:
                    raise AudioFileError(f"{self.name}: corrupt WAV: fmt chunk of {size} bytes")
                body = self._in.read_exact(size + (size & 1))[:size]
                fmt = _parse_fmt(body, self.name)
            elif cid == b"data":
                if fmt is None:
                    raise AudioFileError(f"{self.name}: corrupt WAV: data chunk before fmt chunk")
                return fmt, (None if size in STREAMING_SIZES else size)
            else:
                self._in.skip(size + (size & 1))

    def _check_size(self, raw: bool) -> None:
        """What can be known before decoding: truncation, odd raw length, and the length limit."""
        remaining = self._in.remaining
        fmt = self.format
        if raw and remaining is not None:
            if remaining == 0:
                raise AudioFileError(f"{self.name}: file is empty")
            head = self._in.head(12)
            if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
                # Read as raw, its header was a click and its samples noise if it was not 16 kHz mono
                # 16-bit: a wrong transcript without a word (`transcribe --raw x.wav`).
                raise AudioFileError(
                    f"{self.name}: is a WAV file (RIFF/WAVE header), not headerless S16_LE audio; read it as a WAV"
                )
            if remaining % 2:
                raise AudioFileError(
                    f"{self.name}: raw S16_LE data has an odd number of bytes ({remaining}); truncated?"
                )
        if not raw and remaining is not None and self.data_bytes is not None and remaining < self.data_bytes:
            # Recorders killed mid-write leave the header's size too big: say so.
            raise AudioFileError(
                f"{self.name}: truncated WAV: header promises {self.data_bytes} bytes of audio, file has {remaining}"
            )
        known = self.data_bytes if self.data_bytes is not None else remaining
        if not raw and known is not None and known < fmt.block_align:
            # Said now, not after the samples were "read": `voxnode run --file` opens the file before
            # the models load, and a WAV of 0 frames there went on to exit 0 with a logged error.
            raise AudioFileError(f"{self.name}: WAV has no audio samples")
        if known is not None:
            seconds = known // fmt.block_align / fmt.rate
            if seconds > self.max_seconds:
                raise AudioFileError(self._too_long(seconds))

    def _too_long(self, seconds: float | None) -> str:
        if seconds is None:  # found while reading a pipe
            return f"{self.name}: more than {_hours(self.max_seconds)} of audio, the limit (--max-duration)"
        return f"{self.name}: {_hours(seconds)} of audio; the limit is {_hours(self.max_seconds)} (--max-duration)"

    # ---- samples ----------------------------------------------------------------------------

    def blocks(self, seconds: float = BLOCK_SECONDS) -> Iterator[np.ndarray]:
        """16 kHz mono float32 blocks in [-1, 1]. Raises AudioFileError for what shows only while reading."""
        fmt = self.format
        align = fmt.block_align
        step = max(1, int(seconds * fmt.rate)) * align
        left = self.data_bytes  # None: to the end of the input
        limit_frames = int(self.max_seconds * fmt.rate)
        frames = 0
        carry = b""
        resampler = None
        if fmt.rate != SAMPLE_RATE:
            import soxr  # band-limited; naive interpolation aliases

            resampler = soxr.ResampleStream(fmt.rate, SAMPLE_RATE, 1, dtype="float32", quality="HQ")
        try:
            while left is None or left > 0:
                want = step if left is None else min(step, left)
                data = self._in.read_exact(want)
                end = len(data) < want  # read_exact comes back short only at the end of the input
                if left is not None:
                    left -= len(data)
                    if end:
                        promised = self.data_bytes or 0  # known: `left` counts down from it
                        raise AudioFileError(
                            f"{self.name}: truncated WAV: header promises {promised} "
                            f"bytes of audio, the input ended after {promised - left}"
                        )
                data = carry + data
                usable = len(data) - len(data) % align
                carry = data[usable:]
                if usable:
                    frames += usable // align
                    if frames > limit_frames:
                        raise AudioFileError(self._too_long(None))
                    mono = _to_mono(_decode(data[:usable], fmt))
                    if resampler is not None:
                        mono = resampler.resample_chunk(mono, last=False)
                    if mono.size:
                        yield mono
                if end:
                    break
            if resampler is not None:
                tail = resampler.resample_chunk(np.zeros(0, dtype=np.float32), last=True)
                if tail.size:
                    yield tail
        finally:
            self.close()
        if self.raw and carry:
            raise AudioFileError(f"{self.name}: raw S16_LE data has an odd number of bytes; truncated?")
        if frames == 0:
            raise AudioFileError(f"{self.name}: {'no audio samples' if self.raw else 'WAV has no audio samples'}")

    def read_all(self) -> np.ndarray:
        parts = list(self.blocks())
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def close(self) -> None:
        self._in.close()

    def __enter__(self) -> AudioStream:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _parse_fmt(body: bytes, name: str) -> WavFormat:
    if len(body) < 16:
        raise AudioFileError(f"{name}: corrupt WAV: fmt chunk is {len(body)} bytes")
    tag, channels, rate, _, block, bits = struct.unpack_from("<HHIIHH", body)
    if tag == _EXTENSIBLE and len(body) >= 26:
        tag = struct.unpack_from("<H", body, 24)[0]
    if tag not in (_PCM, _FLOAT):
        raise AudioFileError(f"{name}: unsupported WAV encoding (format tag {tag:#x}); only PCM and float are read")
    if channels < 1 or rate < 1000 or rate > 384000:
        raise AudioFileError(f"{name}: corrupt WAV: {channels} channels at {rate} Hz")
    if tag == _FLOAT and bits not in (32, 64):
        # A 16-bit float (half precision) WAV was "unsupported WAV sample size: 16 bits", as if 16-bit
        # integers were not read.
        raise AudioFileError(
            f"{name}: unsupported WAV sample format: {bits}-bit float; floats are read as 32 or 64 bits, "
            "integers as 8, 16, 24 or 32 bits"
        )
    if tag == _PCM and bits not in (8, 16, 24, 32):
        raise AudioFileError(
            f"{name}: unsupported WAV sample format: {bits}-bit integer; integers are read as 8, 16, 24 or 32 "
            "bits, floats as 32 or 64 bits"
        )
    if block != channels * bits // 8:
        raise AudioFileError(f"{name}: corrupt WAV: block size {block} does not match {channels} x {bits} bits")
    return WavFormat(rate=rate, channels=channels, bits=bits, float_samples=tag == _FLOAT)


def _decode(body: bytes, fmt: WavFormat) -> np.ndarray:
    """Whole frames of interleaved samples -> float32 [frames, channels]."""
    width = fmt.bits // 8
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


def _to_mono(samples: np.ndarray) -> np.ndarray:
    mono = samples.mean(axis=1) if samples.shape[1] > 1 else samples[:, 0]
    return np.ascontiguousarray(mono, dtype=np.float32)
