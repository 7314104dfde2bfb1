"""StreamWorker in silence: one wake-up per 10 frames, 200 ms (issue 23: the wake-up, not the frames'
signal work, is most of an idle stream's CPU); with a wake word one per 5 (its event no later than
before); in speech one per frame. While it batches, its capture may hold the audio that long less the period
the capture's last read waits for (audio/capture_pace.py); once speech starts, it reads every period."""

import time

import numpy as np
import pytest

from tests.helpers import wait_until
from voxnode.audio.capture_pace import CapturePace
from voxnode.audio.frames import Frame
from voxnode.audio.ring import FrameRing
from voxnode.stream.worker import StreamWorker

pytestmark = pytest.mark.unit  # make check: needs only the venv (pyproject.toml markers)


class Pipeline:
    """What the worker uses of a StreamPipeline: `idle`, `wake`, `feed`, `flush`."""

    def __init__(self, idle: bool, wake: object | None):
        self.idle, self.wake = idle, wake
        self.seqs: list[int] = []

    def feed(self, samples, seq, t_mono, t_wall, reference=None) -> None:
        self.seqs.append(seq)

    def flush(self) -> None:
        pass


@pytest.mark.parametrize(
    ("idle", "wake", "batch"), [(True, None, 10), (True, object(), 5), (False, None, 1)], ids=["idle", "wake", "speech"]
)
def test_worker_takes_its_frames_a_batch_at_a_time(idle, wake, batch):
    ring = FrameRing(100)
    pipeline = Pipeline(idle, wake)
    worker = StreamWorker("s", ring, pipeline, emit=lambda report: None)  # type: ignore[arg-type]
    worker.start()
    try:
        for i in range(batch - 1):
            ring.put(Frame(i, np.zeros(320, dtype=np.int16), 0.0, 0.0, 0.0))
        time.sleep(0.2)
        assert pipeline.seqs == [], "woken before its batch was there"
        ring.put(Frame(batch - 1, np.zeros(320, dtype=np.int16), 0.0, 0.0, 0.0))
        assert wait_until(lambda: len(pipeline.seqs) == batch, timeout=5)
    finally:
        ring.close()
        worker.stop(time.monotonic() + 2)
    assert pipeline.seqs == list(range(batch))


def _frame(i: int) -> Frame:
    return Frame(i, np.zeros(320, dtype=np.int16), 0.0, 0.0, 0.0)


def test_worker_relaxes_its_capture_while_idle_and_hurries_it_at_speech():
    ring = FrameRing(100)
    pipeline = Pipeline(True, None)
    pace = CapturePace()
    worker = StreamWorker("s", ring, pipeline, emit=lambda report: None, pace=pace)  # type: ignore[arg-type]
    worker.start()
    try:
        assert wait_until(lambda: pace.hold_s() == pytest.approx(0.16), timeout=5)  # 10 frames less 2
        pipeline.wake = object()  # a wake word: batches of 5, so holds of 60 ms
        ring.put_many([_frame(i) for i in range(10)])
        assert wait_until(lambda: pace.hold_s() == pytest.approx(0.06), timeout=5)
        pipeline.idle = False  # the batch's onset opened an utterance
        ring.put_many([_frame(i) for i in range(10, 15)])
        assert wait_until(lambda: pace.hold_s() == 0.0, timeout=5), "speech, and the capture still holds"
        pipeline.idle = True  # the utterance ended
        ring.put(_frame(15))
        assert wait_until(lambda: pace.hold_s() == pytest.approx(0.06), timeout=5)
    finally:
        ring.close()
        worker.stop(time.monotonic() + 2)
    assert pipeline.seqs == list(range(16))
