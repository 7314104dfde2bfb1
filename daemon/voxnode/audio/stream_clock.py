"""When a capture's frames were captured, from how many frames the device has delivered.

A period's read time is not its capture time: a capture thread held up (a loaded machine, a GC pause)
reads the periods the device buffered meanwhile all at once, later. Stamped with their read times,
the microphone's and the echo reference's frames were paired up to 0.5 s apart under load
(tests/stream/test_echo_alsa.py: paired delay 0 ms once at load 14, 493 ms once; true 60 ms).

A device delivers frames at its rate from the moment it started, so frame k was captured at
origin + k / rate. Every read gives a bound on the origin: the frames read so far were all there at
the read, so origin <= read time - frames so far / rate, with equality for a read that returned as
soon as its period was in; a late read only gives a looser bound. The origin is the tightest bound
seen (the minimum), taken again each ORIGIN_WINDOW_S from that window's reads alone, so that a
device that delivered less than its rate (a stream that paused without an overrun, a clock a little
slower than the machine's) is followed within a window. Measured on two FIFO `type file` PCMs written
in lockstep: the origins of both from one read each 20 ms agreed within 0.01 ms, and held there while
one reader was held up 300 ms (tests/audio/test_echo_pairing.py).

ALSA's own timestamps (snd_pcm_htimestamp) are no help there: on the `type file`/`null` PCMs they
are the time of the call (checked: each read's stamp was its read time, avail always the buffer).
"""

from __future__ import annotations

from voxnode.audio.format import SAMPLE_RATE

# The window each origin is the minimum over. Long enough that some read in it returned on time on a
# loaded machine (at load 9 on 2 cores, 28 of 1121 reads of the reference came over 40 ms late), short
# enough that a device that paused is followed soon (its frames are dropped as late meanwhile: the
# echo reference's tap reports them) and that a clock drift of 100 ppm moves it by 0.2 ms only.
ORIGIN_WINDOW_S = 2.0


class StreamClock:
    """The capture time of each frame one capture delivers; `restart()` when its stream restarts
    (an open, an overrun: the frames counted so far no longer say how long it has run)."""

    def __init__(self, rate: int = SAMPLE_RATE, window_s: float = ORIGIN_WINDOW_S):
        self.rate = rate
        self.window_s = window_s
        self.restart()

    def restart(self) -> None:
        self.frames = 0  # delivered since the stream started
        self._origin: float | None = None  # when its first frame was captured
        self._window_min = float("inf")  # the tightest bound in the current window
        self._window_end = 0.0

    def read(self, t_read: float, n: int) -> None:
        """`n` frames were read at `t_read` (monotonic)."""
        self.frames += n
        bound = t_read - self.frames / self.rate
        self._window_min = min(self._window_min, bound)
        if self._origin is None or bound < self._origin:
            self._origin = bound  # a tighter bound: taken at once
        if t_read >= self._window_end:
            self._origin = self._window_min  # the window's own minimum: a stream that fell behind
            self._window_min = float("inf")
            self._window_end = t_read + self.window_s

    def backlog(self, t: float) -> float:
        """Frames the device had captured by `t` (monotonic) beyond those delivered: never more than
        there were (the origin is a bound from above), less by the origin's error."""
        assert self._origin is not None, "backlog() before read()"
        return (t - self._origin) * self.rate - self.frames

    def time_of(self, frame: int) -> float:
        """The capture time of frame number `frame` (counted from the stream's start)."""
        assert self._origin is not None, "time_of() before read()"
        return self._origin + frame / self.rate
