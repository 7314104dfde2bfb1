"""FrameRing.get_batch: the idle stream worker's one wake-up for several frames."""

import threading
import time

import numpy as np
import pytest

from voxnode.audio.frames import Frame
from voxnode.audio.ring import FrameRing

pytestmark = pytest.mark.unit  # make check: needs only the venv (pyproject.toml markers)


def _frame(i: int) -> Frame:
    return Frame(i, np.zeros(320, dtype=np.int16), float(i), float(i), float(i))


def test_get_batch_waits_for_min_frames_and_keeps_order():
    ring = FrameRing(50)
    got = []
    t = threading.Thread(target=lambda: got.append(ring.get_batch(50, min_frames=5, timeout=5)))
    t.start()
    for i in range(4):
        ring.put(_frame(i))
    time.sleep(0.1)
    assert not got, "woken before min_frames were there"
    ring.put(_frame(4))
    t.join(2)
    assert [f.seq for f in got[0]] == [0, 1, 2, 3, 4]
    assert ring.depth == 0


def test_get_batch_returns_what_there_is_on_timeout_close_and_max():
    ring = FrameRing(50)
    for i in range(3):
        ring.put(_frame(i))
    t0 = time.monotonic()
    assert [f.seq for f in ring.get_batch(50, min_frames=5, timeout=0.1)] == [0, 1, 2]
    assert 0.05 <= time.monotonic() - t0 < 1.0
    assert ring.get_batch(50, min_frames=5, timeout=0.05) == []
    for i in range(3, 10):
        ring.put(_frame(i))
    assert [f.seq for f in ring.get_batch(4)] == [3, 4, 5, 6]
    ring.close()
    assert [f.seq for f in ring.get_batch(50, min_frames=10, timeout=5)] == [7, 8, 9]  # closed: at once
    assert ring.get_batch(50, min_frames=10, timeout=5) == []


def test_get_batch_min_frames_above_capacity_still_wakes():
    ring = FrameRing(3)
    got = []
    t = threading.Thread(target=lambda: got.append(ring.get_batch(10, min_frames=10, timeout=5)))
    t.start()
    for i in range(3):  # a full ring is as many frames as the consumer can ever get
        ring.put(_frame(i))
    t.join(2)
    assert not t.is_alive()
    assert [f.seq for f in got[0]] == [0, 1, 2]


def test_single_get_still_woken_after_a_batch_wait():
    ring = FrameRing(10)
    assert ring.get_batch(10, min_frames=5, timeout=0.02) == []
    got = []
    t = threading.Thread(target=lambda: got.append(ring.get(timeout=5)))
    t.start()
    time.sleep(0.05)
    ring.put(_frame(7))
    t.join(2)
    assert got and got[0].seq == 7


def test_put_many_wakes_a_consumer_waiting_for_more_and_drops_oldest():
    """An idle capture's drain (audio/capture_pace.py) comes in one put_many: its frames have waited
    as long as the worker allows already, so the worker waiting for a batch of 10 takes these 3 now."""
    ring = FrameRing(5)
    got = []
    t = threading.Thread(target=lambda: got.append(ring.get_batch(50, min_frames=10, timeout=30)))
    t.start()
    time.sleep(0.05)
    assert ring.put_many([_frame(i) for i in range(3)]) == 0
    t.join(10)
    assert not t.is_alive() and [f.seq for f in got[0]] == [0, 1, 2]
    # Full: the oldest go first, counted, as with put.
    assert ring.put_many([_frame(i) for i in range(3, 10)]) == 2
    assert ring.dropped == 2 and ring.high_water == 5
    assert [f.seq for f in ring.get_batch(50)] == [5, 6, 7, 8, 9]
