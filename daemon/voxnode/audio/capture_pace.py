"""How promptly a capture reads its device, as its stream's worker says (issue 23, idle CPU).

One way: the stream's worker writes it (`relax` while its pipeline is idle, `hurry` once it is not),
the capture follows it (audio/alsa_capture.py); neither knows the other. Prompt, the capture reads
every period as the device delivers it (50 wake-ups a second). Relaxed, it may leave up to `hold_s`
of audio in the device's buffer and read it in one go: in silence the worker takes its frames in
batches that wait that long in the ring anyway (stream/worker.py IDLE_BATCH). `hurry` wakes a
capture that is holding at once, so the frames after an onset are read as they come.
"""

from __future__ import annotations

import threading


class CapturePace:
    def __init__(self) -> None:
        self._prompt = threading.Event()
        self._prompt.set()
        self._hold_s = 0.0

    def relax(self, hold_s: float) -> None:
        """Captured audio may wait up to `hold_s` in the device before it is read."""
        self._hold_s = hold_s
        self._prompt.clear()

    def hurry(self) -> None:
        """Read every period as it comes; a capture holding is woken now."""
        self._prompt.set()

    def hold_s(self) -> float:
        """How long the capture may hold its audio now (0: read every period as it comes)."""
        return 0.0 if self._prompt.is_set() else self._hold_s

    def hold(self, seconds: float) -> None:
        """Wait `seconds`, or until `hurry`."""
        self._prompt.wait(seconds)
