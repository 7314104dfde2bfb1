"""How promptly a capture reads its device, as its stream's worker says (issue 23, idle CPU).

One way: the stream's worker writes it (`relax` while its pipeline is idle, `hurry` once it is not),
the capture follows it (audio/alsa_capture.py); neither knows the other. Prompt, the capture reads
every period as the device delivers it (50 wake-ups a second). Relaxed, it may leave up to `hold_s`
of audio in the device's buffer and read it in one go: in silence the worker takes its frames in
batches that wait that long in the ring anyway (stream/worker.py IDLE_BATCH). `hurry` wakes a
capture that is holding at once, so the frames after an onset are read as they come.

`Drain` is the capture's side: its read loop asks it before each read whether to read or hold, and
tells it what each read brought; it keeps the frames a relaxed capture has read until they go to
the ring together.
"""

from __future__ import annotations

import threading
import time

from voxnode.audio.format import PERIOD_S
from voxnode.audio.frames import Frame
from voxnode.audio.ring import FrameRing
from voxnode.audio.stream_clock import StreamClock

# Relaxed, a capture leaves at most its device's buffer less this much audio unread: the margin a late
# drain has before the device overruns. It is what a late read had before issue 23's fourth pass (the
# whole buffer then: 8 periods, 160 ms; the default is 16 now, so that the idle hold gets 160 ms and
# the margin stays).
HOLD_MARGIN_S = 0.16
# A read that took this long waited for its period to come in. Measured here, a read with a period
# waiting returns in 4 us (hot) to 90 us (live, cold caches); one that waits, within 20 ms.
WAITED_S = 0.001


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


class Drain:
    """One read loop's holds (audio/alsa_capture.py): relaxed, the frames read go to `held` and reach
    the ring together, once the device has no more (or more than a hold is behind them); prompt,
    `held` is None and every frame goes to the ring as it is read."""

    def __init__(self, pace: CapturePace, ring: FrameRing, clock: StreamClock, period_frames: int, buffer_s: float):
        self._pace, self._ring, self._clock, self._period = pace, ring, clock, period_frames
        self._max_hold = buffer_s - HOLD_MARGIN_S  # the most a relaxed capture leaves (0 or less: never holds)
        self.held: list[Frame] | None = None  # relaxed: this drain's frames, put in the ring together
        self._caught_up = False  # relaxed: the last read waited for its period (the device held no more)
        self._waited = False  # the last read waited for its period
        self._t_read = time.monotonic()

    def ready_to_read(self) -> bool:
        """Before each read: True to read now; False after holding instead (the loop looks at its stop
        flag and asks again)."""
        hold = min(self._pace.hold_s(), self._max_hold)
        if hold <= 0:
            if self.held is not None:  # hurried: the held frames first, then every period as it comes
                self._ring.put_many(self.held)
                self.held, self._caught_up = None, False
            return True
        if self.held is None:
            self.held = []
        elif self._caught_up:
            # Nothing more in the device: one wake-up per hold (and one for the read that waits at the
            # end of each drain) instead of one per period. The period that read brought rides with
            # the next drain.
            self._pace.hold(hold)
            self._caught_up = False
            self._t_read = time.monotonic()
            return False
        elif self.held and (self._clock.backlog(time.monotonic()) < self._period or len(self.held) * PERIOD_S >= hold):
            # The next read waits for its period (the device's clock says none is due), or the drain
            # has more than a hold behind it (a device that fell behind, or one faster than real
            # time): what it has read goes to the worker now, in one go.
            self.pass_on()
        return True

    def read_returned(self, t: float) -> None:
        """A read returned at `t` (monotonic), whatever it brought."""
        self._waited = t - self._t_read >= WAITED_S
        self._t_read = t

    def delivered(self, t: float) -> None:
        """That read's frames are counted by the clock."""
        if self.held is not None and self._waited and self._clock.backlog(t) < self._period:
            # Caught up: the read waited, and the device's clock says nothing more is due (a read held
            # up with periods behind it also takes long). A read that waited keeps the clock's origin
            # tight (audio/stream_clock.py): stopping a drain on the clock alone, its error would only
            # grow.
            self._caught_up = True

    def pass_on(self) -> None:
        """What this drain has read goes to the ring now (before an overrun's gap; at the loop's end)."""
        if self.held:
            self._ring.put_many(self.held)
            self.held.clear()
