"""Test helpers for real-ALSA capture."""

from __future__ import annotations

import errno
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np


def wait_until(cond, timeout: float = 5.0, step: float = 0.01) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(step)
    return cond()


class FifoWriter:
    """Writes bytes into an ALSA infile FIFO, optionally paced, and keeps it open until closed.

    Keeping the write end open matters: at EOF the ALSA file plugin returns
    stale buffer contents instead of blocking, so a test that wants "no more
    audio" must hold the FIFO open without writing.
    """

    def __init__(self, path: Path, data: bytes, period_bytes: int = 640, pace_s: float = 0.0):
        self.path, self.data, self.period_bytes, self.pace_s = path, data, period_bytes, pace_s
        self.done = threading.Event()
        self._release = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        fd = os.open(self.path, os.O_WRONLY)
        try:
            next_t = time.monotonic()
            for i in range(0, len(self.data), self.period_bytes):
                os.write(fd, self.data[i : i + self.period_bytes])
                if self.pace_s:
                    # On a schedule, not a sleep per period: a loaded machine's late wake-ups must not
                    # add up and stretch the audio (tests check its real-time span).
                    next_t += self.pace_s
                    time.sleep(max(0.0, next_t - time.monotonic()))
            self.done.set()
            self._release.wait(30)
        finally:
            os.close(fd)

    def close(self) -> None:
        self._release.set()
        self._thread.join(5)
        # A capture told to stop is still blocked in its read of the FIFO until the write end closes,
        # and closes its end a moment later. A writer that opens in between (the next test's) is
        # connected to that reader: its open returns, its writes fail with EPIPE once the reader has
        # gone, and the next capture waits in its open for a writer that is gone. Through pyalsaaudio
        # (the GIL held in the open) that froze the test suite (issue 27: once in 56 runs; in a loop
        # of this pattern, at iteration 36 of 300).
        assert wait_until(lambda: fifo_unread(self.path), timeout=5), f"{self.path}: still open for reading"


class PairedFifoWriter:
    """Writes the microphone and the reference FIFOs period by period, on one schedule, so the
    reference leads its echo as in a real node; `ref_stop_s`: the reference stops being written
    after that long (its FIFO kept open: a device that stalls)."""

    def __init__(self, alsa_dir, mic: np.ndarray, ref: np.ndarray, ref_stop_s: float | None = None):
        self.paths = (alsa_dir / "mic.fifo", alsa_dir / "ref.fifo")
        self.mic = np.clip(mic, -32768, 32767).astype("<i2").tobytes()
        self.ref = np.clip(ref, -32768, 32767).astype("<i2").tobytes()
        self.ref_stop = None if ref_stop_s is None else int(ref_stop_s / 0.02) * 640
        self.done = threading.Event()
        self._release = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        fds = [os.open(p, os.O_WRONLY) for p in self.paths]
        try:
            next_t = time.monotonic()
            for i in range(0, len(self.mic), 640):
                os.write(fds[1], self.ref[i : i + 640]) if self.ref_stop is None or i < self.ref_stop else None
                os.write(fds[0], self.mic[i : i + 640])
                next_t += 0.02
                time.sleep(max(0.0, next_t - time.monotonic()))
            self.done.set()
            self._release.wait(30)
        finally:
            for fd in fds:
                os.close(fd)

    def close(self) -> None:
        self._release.set()
        self._thread.join(5)
        for p in self.paths:
            assert wait_until(lambda p=p: fifo_unread(p), timeout=5), f"{p}: still open for reading"


def fifo_unread(path: Path) -> bool:
    """True when nothing has `path` (a FIFO) open for reading: a non-blocking write open says ENXIO."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as e:
        return e.errno == errno.ENXIO
    os.close(fd)
    return False


def outcome_within(call: Callable[[], object], fifo: Path | None = None, timeout: float = 10.0) -> object:
    """What `call` returned or raised, within `timeout`; else "hang". A call still waiting on `fifo` (an
    open or a read waiting for a writer) is let go first: a writer that opens and closes at once ends it."""
    got: list[object] = []

    def run() -> None:
        try:
            got.append(call())
        except BaseException as e:  # noqa: BLE001 (the test looks at it)
            got.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        if fifo is not None:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            t.join(5)
        return "hang"
    return got[0]


def random_pcm(periods: int, channels: int = 1, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(-32768, 32767, size=periods * 320 * channels, dtype=np.int16)
