"""A bounded, thread-safe frame buffer that never blocks the producer.

The capture thread must keep reading ALSA on time or the hardware overruns, so
when the consumer falls behind we drop the oldest frames (the newest audio is
the one a listener cares about) and count every frame dropped.
"""

from __future__ import annotations

import threading
import time
from collections import deque

from voxnode.audio.frames import Frame


class FrameRing:
    def __init__(self, capacity: int):
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self._frames: deque[Frame] = deque()
        self._cond = threading.Condition()
        self._closed = False
        self.dropped = 0
        self.high_water = 0

    def put(self, frame: Frame) -> bool:
        """Add a frame; return True if an old frame had to be dropped for it."""
        with self._cond:
            dropped = False
            if len(self._frames) >= self.capacity:
                self._frames.popleft()
                self.dropped += 1
                dropped = True
            self._frames.append(frame)
            self.high_water = max(self.high_water, len(self._frames))
            self._cond.notify()
            return dropped

    def put_wait(self, frame: Frame, timeout: float | None = None) -> bool:
        """Add a frame, waiting for room instead of dropping (for file sources, which can wait).

        Returns False if the ring was closed or the wait timed out.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while len(self._frames) >= self.capacity and not self._closed:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._cond.wait(remaining)
            if self._closed:
                return False
            self._frames.append(frame)
            self.high_water = max(self.high_water, len(self._frames))
            self._cond.notify_all()
            return True

    def get(self, timeout: float | None = None) -> Frame | None:
        """The oldest frame, or None on timeout or when closed and empty."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while not self._frames:
                if self._closed:
                    return None
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return None
                self._cond.wait(remaining)
            frame = self._frames.popleft()
            self._cond.notify_all()
            return frame

    def close(self) -> None:
        """Wake every waiter; `get` drains what is left, then returns None."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def depth(self) -> int:
        with self._cond:
            return len(self._frames)
