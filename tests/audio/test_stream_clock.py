"""audio/stream_clock.py: capture times from the frames delivered, whatever the read times."""

import pytest

from voxnode.audio.stream_clock import ORIGIN_WINDOW_S, StreamClock

pytestmark = pytest.mark.unit  # make check: needs only the venv (pyproject.toml markers)

P = 320


def test_late_reads_do_not_move_the_capture_times():
    clock = StreamClock()
    clock.read(10.02, P)  # on time: period 0 was in at 10.02
    clock.read(10.3405, P)  # held up 300 ms: periods 1..15 read at once
    for k in range(2, 16):
        clock.read(10.341 + k * 1e-5, P)
    assert clock.time_of(15 * P) == pytest.approx(10.3, abs=1e-9)  # its capture time, not 10.34
    clock.read(10.34, P)  # caught up: on time again
    assert clock.time_of(0) == pytest.approx(10.0, abs=1e-9)


def test_a_stream_that_paused_is_followed_within_a_window():
    """A device that delivered nothing for 3 s and went on without an overrun (a FIFO whose writer
    paused): its frames are 3 s later than their count says; the next window's reads say so."""
    clock, t, k = StreamClock(), 100.0, 0
    while t < 101.0:
        k, t = k + 1, t + 0.02
        clock.read(t, P)
    t += 3.0  # the pause
    ends = 0.0
    while t < 101.0 + 3.0 + 2 * ORIGIN_WINDOW_S:
        k, t = k + 1, t + 0.02
        clock.read(t, P)
        ends = clock.time_of(k * P)  # the end of the last frame read: now, once followed
    assert ends == pytest.approx(t, abs=1e-6)


def test_restart_counts_afresh():
    clock = StreamClock()
    clock.read(5.02, P)
    clock.restart()  # an overrun: frames lost
    clock.read(7.02, P)
    assert clock.time_of(0) == pytest.approx(7.0)
