"""How `voxnode fleet`'s main thread waits: until paho's thread wakes it, a timeout, or Ctrl-C.

Ctrl-C (SIGINT) is taken whatever SIGINT's disposition was at start. A shell without job control (a
script's `cmd &`, so a test run started that way) starts its background jobs with SIGINT ignored;
Python then installs no handler of its own, and the live view ran on after Ctrl-C for ever.

The handler only enqueues (as Daemon._on_signal does); the main thread raises KeyboardInterrupt
itself, where it waits. Python's own handler raises it wherever the main thread is: inside
threading's Condition.wait (under Event.wait and Thread.start) it can land between the lock's
release and the `try` that restores it, and the Event's `with` then fails with `RuntimeError:
release unlocked lock`, a traceback (seen when a KeyboardInterrupt was injected at each line the
main thread runs). Only around a call that blocks in C and shares nothing with another thread (the
first connect, a write to stdout) does Ctrl-C raise at once (`interruptible`).
"""

from __future__ import annotations

import queue
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class Waits:
    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[bool] = queue.SimpleQueue()  # True: Ctrl-C; False: a wake-up
        self._interrupted = False
        self._raising = False

    @contextmanager
    def taking_ctrl_c(self) -> Iterator[Waits]:
        """SIGINT comes here until the block ends (where signals can be taken: the main thread)."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = signal.signal(signal.SIGINT, self._on_sigint)
        try:
            yield self
        finally:
            signal.signal(signal.SIGINT, previous)

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        if self._raising:
            raise KeyboardInterrupt
        self._queue.put(True)  # safe even where it interrupts the main thread inside get()

    @contextmanager
    def interruptible(self) -> Iterator[None]:
        """Ctrl-C raises KeyboardInterrupt at once in this block (and one that came before it)."""
        self._raising = True
        try:
            self._take(block=False, timeout=0.0)
            yield
        finally:
            self._raising = False

    def wake(self) -> None:
        """From any thread: a wait() in progress returns."""
        self._queue.put(False)

    def wait(self, seconds: float) -> None:
        """Until woken or `seconds` have passed; KeyboardInterrupt where Ctrl-C came, now or before."""
        self._take(block=True, timeout=max(0.0, seconds))

    def sleep(self, seconds: float) -> None:
        """`seconds`, woken or not; KeyboardInterrupt at once where Ctrl-C comes."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            self.wait(left)
        self._take(block=False, timeout=0.0)

    def _take(self, block: bool, timeout: float) -> None:
        while not self._interrupted:
            try:
                ctrl_c = self._queue.get(block, timeout)
            except queue.Empty:
                return
            self._interrupted = ctrl_c
            if not ctrl_c and block:
                return  # woken
        raise KeyboardInterrupt
