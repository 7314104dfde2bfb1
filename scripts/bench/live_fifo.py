"""A microphone for `voxnode run` in a subprocess: an ALSA `type file` PCM reading a FIFO that this
writer feeds in real time, one 20 ms period at a time, silence unless speech is queued
(test-recipes.md section 1: FIFO infile, whole periods of 640 bytes, never EOF)."""

from __future__ import annotations

import errno
import os
import threading
import time
from collections import deque
from pathlib import Path

PERIOD_BYTES = 640  # 20 ms of S16_LE 16 kHz mono
PERIOD_S = 0.02


def asoundrc(pcms: dict[str, Path]) -> str:
    return "".join(
        f'pcm.{name} {{\n    type file\n    slave.pcm "null"\n    file "/dev/null"\n    infile "{fifo}"\n'
        f'    format "raw"\n}}\n'
        for name, fifo in pcms.items()
    )


class LiveFifo:
    def __init__(self, path: Path):
        self.path = path
        os.mkfifo(path)
        self._chunks: deque[tuple[bytes, threading.Event | None]] = deque()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.periods = 0
        self._thread = threading.Thread(target=self._run, name=f"fifo-{path.name}", daemon=True)
        self._thread.start()

    def say(self, pcm16: bytes) -> threading.Event:
        """Queue audio; the event is set once its last period has been written."""
        done = threading.Event()
        pcm16 += b"\0" * (-len(pcm16) % PERIOD_BYTES)
        with self._lock:
            for i in range(0, len(pcm16), PERIOD_BYTES):
                last = i + PERIOD_BYTES >= len(pcm16)
                self._chunks.append((pcm16[i : i + PERIOD_BYTES], done if last else None))
        return done

    def _next(self) -> tuple[bytes, threading.Event | None]:
        with self._lock:
            return self._chunks.popleft() if self._chunks else (b"\0" * PERIOD_BYTES, None)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:  # non-blocking open: ENXIO until the capture opens its end, and stop() still works
                fd = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as e:
                if e.errno != errno.ENXIO:
                    raise
                time.sleep(0.05)
                continue
            os.set_blocking(fd, True)
            t0 = time.monotonic()
            n = 0
            try:
                while not self._stop.is_set():
                    chunk, done = self._next()
                    os.write(fd, chunk)
                    self.periods += 1
                    if done is not None:
                        done.set()
                    n += 1
                    delay = t0 + n * PERIOD_S - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
            except BrokenPipeError:
                pass  # the capture closed it (stream stopped or restarted): wait for the next open
            finally:
                os.close(fd)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
