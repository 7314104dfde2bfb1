"""An idle stream's capture holds its audio in the device and reads it in one go (issue 23, fourth
pass): through a real ALSA FIFO PCM, written in real time, across idle -> speech -> idle."""

import threading
import time

import numpy as np

from tests.helpers import FifoWriter, random_pcm
from voxnode.audio.alsa_capture import AlsaCapture
from voxnode.audio.capture_pace import CapturePace
from voxnode.audio.frames import Frame
from voxnode.audio.ring import FrameRing
from voxnode.config.audio import AudioConfig, StreamConfig

HOLD_S = 0.16  # what the idle worker allows (stream/worker.py), and what the default buffer leaves


class RecordingRing(FrameRing):
    """Which call put each frame in: `put` (one period as it came) or `put_many` (a held drain)."""

    def __init__(self, capacity: int):
        super().__init__(capacity)
        self.calls: list[tuple[str, float, list[Frame]]] = []

    def put(self, frame: Frame) -> bool:
        self.calls.append(("put", time.monotonic(), [frame]))
        return super().put(frame)

    def put_many(self, frames: list[Frame]) -> int:
        self.calls.append(("put_many", time.monotonic(), list(frames)))
        return super().put_many(frames)


def test_hurry_wakes_a_hold_at_once():
    pace = CapturePace()
    assert pace.hold_s() == 0.0
    pace.relax(HOLD_S)
    assert pace.hold_s() == HOLD_S
    done = threading.Event()
    t = threading.Thread(target=lambda: (pace.hold(60), done.set()), daemon=True)
    t.start()
    time.sleep(0.05)
    assert not done.is_set()
    pace.hurry()
    assert done.wait(10), "a capture holding was not woken by hurry()"
    assert pace.hold_s() == 0.0


def test_idle_speech_idle_frames_exact_in_order_and_held_only_while_relaxed(alsa_dir):
    n = 150  # 3 s at 20 ms: about 1 s relaxed, 1 s prompt, 1 s relaxed
    # The device goes on delivering after them: a drain puts what it read in the ring before the read
    # that waits for the next period, and a device that stops delivering is a stall.
    pcm = random_pcm(n + 50, seed=23)
    writer = FifoWriter(alsa_dir / "mic.fifo", pcm.tobytes(), pace_s=0.02)
    ring = RecordingRing(1000)
    cap = AlsaCapture(StreamConfig(name="t", device="vx_fifo"), AudioConfig(), ring)
    cap.pace.relax(HOLD_S)  # the worker relaxes it before its capture starts (the stream starts idle)
    cap.start()
    frames: list[Frame] = []
    t_hurry = t_relax = 0.0
    try:
        while len(frames) < n:
            batch = ring.get_batch(n, timeout=5)
            assert batch, f"only {len(frames)} of {n} frames arrived"
            frames += batch
            if not t_hurry and len(frames) >= 50:  # an onset: the worker hurries its capture
                t_hurry = time.monotonic()
                cap.pace.hurry()
            elif t_hurry and not t_relax and len(frames) >= 100:  # the utterance ended
                t_relax = time.monotonic()
                cap.pace.relax(HOLD_S)
        t_done = time.monotonic()
        assert writer.done.wait(10)  # (a writer still writing when the capture stops gets EPIPE)
    finally:
        cap.stop(time.monotonic() + 1)
        writer.close()
    assert ring.dropped == 0 and cap.stats.xruns == 0
    assert b"".join(f.samples.tobytes() for f in frames) == pcm[: len(frames) * 320].tobytes()
    assert [f.seq for f in frames] == list(range(len(frames)))

    first = [c for c in ring.calls if c[1] < t_hurry]
    middle = [c for c in ring.calls if t_hurry <= c[1] < t_relax]
    last = [c for c in ring.calls if t_relax <= c[1] < t_done]  # not what the stop brought
    # Relaxed: drains only, several periods each (a hold is 8 periods).
    for phase in (first, last[1:]):  # a read in flight when relaxed may still be put as it came
        drains = [len(c[2]) for c in phase if c[2]]
        assert all(c[0] == "put_many" for c in phase), [c[0] for c in phase]
        assert sum(drains) / len(drains) >= 3, drains
    # Hurried: the held frames go first (with a drain that ended as it came: two calls), then every
    # period as it comes.
    names = [c[0] for c in middle]
    lead = 2 if names[:2] == ["put_many"] * 2 else 1
    assert names[:1] == ["put_many"] and names[lead:] == ["put"] * (len(names) - lead) and len(names) > 20, names
    # A held period is stamped with when it was captured, not with when the drain read it.
    for name, _, batch in first + middle + last:
        if name == "put_many":
            gaps = np.diff([f.t_mono for f in batch])
            assert np.allclose(gaps, 0.02, atol=0.01), gaps  # read in one go: microseconds apart
