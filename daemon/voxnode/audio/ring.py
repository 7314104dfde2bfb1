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
        # `put` (the capture thread, every 20 ms period) takes the condition's lock directly: the
        # same lock, without Condition.__enter__/__exit__'s two Python calls (issue 23, idle CPU).
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._closed = False
        # How many frames the waiting consumer needs before it is worth waking it
        # (get_batch); producers skip the notify below that, so an idle consumer
        # batching its frames is not woken once per frame.
        self._want = 1
        self._bursts = 0  # put_many calls: each ends a consumer's wait for its batch
        self.dropped = 0
        self.high_water = 0

    def put(self, frame: Frame) -> bool:
        """Add a frame; return True if an old frame had to be dropped for it."""
        with self._lock:
            dropped = False
            if len(self._frames) >= self.capacity:
                self._frames.popleft()
                self.dropped += 1
                dropped = True
            self._frames.append(frame)
            depth = len(self._frames)
            if depth > self.high_water:
                self.high_water = depth
            if depth >= self._want:
                self._cond.notify()
            return dropped

    def put_many(self, frames: list[Frame]) -> int:
        """Add frames a producer held back (an idle capture's drain: audio/capture_pace.py) under one
        lock; return how many old frames were dropped for them. The consumer is woken whatever batch
        it waits for: these frames have already waited as long as it allows."""
        with self._lock:
            dropped = 0
            for frame in frames:
                if len(self._frames) >= self.capacity:
                    self._frames.popleft()
                    dropped += 1
                self._frames.append(frame)
            self.dropped += dropped
            depth = len(self._frames)
            if depth > self.high_water:
                self.high_water = depth
            if frames:
                self._bursts += 1
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
            depth = len(self._frames)
            if depth > self.high_water:
                self.high_water = depth
            if depth >= self._want:  # a waiter for room gains nothing from a put
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

    def get_batch(self, max_frames: int, min_frames: int = 1, timeout: float | None = None) -> list[Frame]:
        """The oldest frames, up to `max_frames`, once at least `min_frames` are there.

        Returns early with what there is (possibly nothing) when the ring is closed,
        `timeout` passes or a producer's `put_many` comes. One wake-up for several frames: an idle consumer that waits
        for a few frames costs far less CPU than one woken for every frame.
        """
        want = max(1, min(min_frames, max_frames, self.capacity))
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            if len(self._frames) < want and not self._closed:
                self._want = want
                bursts = self._bursts
                try:
                    while len(self._frames) < want and not self._closed and self._bursts == bursts:
                        remaining = None if deadline is None else deadline - time.monotonic()
                        if remaining is not None and remaining <= 0:
                            break
                        self._cond.wait(remaining)
                finally:
                    self._want = 1
            n = min(max_frames, len(self._frames))
            if n <= 0:
                return []
            frames = [self._frames.popleft() for _ in range(n)]
            self._cond.notify_all()  # room for a producer waiting in put_wait
            return frames

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
