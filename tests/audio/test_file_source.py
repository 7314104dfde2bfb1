"""FileSource: a file played into the ring like a microphone (paced), or as fast as taken."""

import time

import numpy as np
import pytest

from voxnode.audio.file_source import FileSource
from voxnode.audio.ring import FrameRing

pytestmark = pytest.mark.unit  # make check: needs only the venv (pyproject.toml markers)


def test_file_source_fast_mode_never_drops():
    audio = np.random.default_rng(0).integers(-3000, 3000, 320 * 100 + 17, dtype=np.int16)
    ring = FrameRing(5)
    src = FileSource("f", audio, ring, realtime=False)
    src.start()
    got = []
    while (f := ring.get(timeout=2)) is not None:
        got.append(f.samples)
        time.sleep(0.001)  # a slow consumer
    assert ring.dropped == 0 and len(got) == 101
    joined = np.concatenate(got)
    assert np.array_equal(joined[: audio.size], audio) and not joined[audio.size :].any()
    assert src.stats.state == "finished"


def test_file_source_realtime_paces_frames():
    audio = np.zeros(320 * 25, dtype=np.int16)
    ring = FrameRing(100)
    src = FileSource("f", audio, ring, realtime=True)
    t0 = time.monotonic()
    src.start()
    n = 0
    while ring.get(timeout=2) is not None:
        n += 1
    elapsed = time.monotonic() - t0
    assert n == 25 and 0.45 < elapsed < 1.5, elapsed
