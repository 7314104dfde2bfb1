"""Test helpers for real-ALSA capture."""

from __future__ import annotations

import os
import threading
import time
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


def random_pcm(periods: int, channels: int = 1, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(-32768, 32767, size=periods * 320 * channels, dtype=np.int16)
