"""A microphone's settings read from its samples (audio/input_check.py): a muted capture's digital
silence and a capture gain that clips, said once each way, in health and through real ALSA."""

from __future__ import annotations

import logging
import time

import numpy as np

from tests.helpers import FifoWriter, wait_until
from voxnode.audio.alsa_capture import AlsaCapture
from voxnode.audio.format import PERIOD_FRAMES
from voxnode.audio.input_check import CLIP_BLOCK_S, CLIP_CLEAR_BLOCKS, CLIP_FRAMES, SILENT_S, InputCheck
from voxnode.audio.ring import FrameRing
from voxnode.config.audio import AudioConfig, StreamConfig

FRAMES_PER_S = 50
ZERO = np.zeros(PERIOD_FRAMES, dtype=np.int16)


def room(seed: int = 0) -> np.ndarray:
    """A real microphone's idle frame: a little noise, never exact zeros."""
    return np.random.default_rng(seed).integers(-20, 21, PERIOD_FRAMES).astype(np.int16)


def clipped() -> np.ndarray:
    x = room()
    x[100:110] = 32767
    x[200:205] = -32768
    return x


def messages(caplog) -> list[tuple[str, str]]:
    return [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "voxnode.audio.input_check"]


def test_digital_silence_is_said_after_a_minute_and_its_end_at_once(caplog):
    check = InputCheck("kitchen")
    with caplog.at_level(logging.INFO, logger="voxnode.audio.input_check"):
        for _ in range(int(SILENT_S * FRAMES_PER_S) - 1):
            check.feed(ZERO)
        assert check.figures.input == "ok" and messages(caplog) == []  # a gated device in a quiet room
        check.feed(ZERO)
        assert check.figures.snapshot() == {"input": "silent", "silent_s": 60.0, "clipped_frames": 0}
        for _ in range(500):
            check.feed(ZERO)  # said once
        check.feed(room())
        assert check.figures.snapshot() == {"input": "ok", "silent_s": 0.0, "clipped_frames": 0}
    said = messages(caplog)
    assert [level for level, _ in said] == ["WARNING", "INFO"]
    assert said[0][1].startswith("stream kitchen: the microphone has given digital silence (every sample 0) for 60 s")
    assert "alsamixer" in said[0][1] and "audio.channel" in said[0][1]
    assert said[1][1] == "stream kitchen: the microphone gives sound again (after 70 s of digital silence)"


def test_clipping_is_judged_per_minute_and_cleared_after_ten_clean_ones(caplog):
    check = InputCheck("hall")
    block = int(CLIP_BLOCK_S * FRAMES_PER_S)

    def minute(n_clipped: int) -> None:
        for i in range(block):
            check.feed(clipped() if i < n_clipped else room(i))

    with caplog.at_level(logging.INFO, logger="voxnode.audio.input_check"):
        minute(CLIP_FRAMES - 1)  # a door slammed: not the gain
        assert check.figures.input == "ok" and check.figures.clipped_frames == CLIP_FRAMES - 1
        minute(CLIP_FRAMES)
        assert check.figures.input == "clipping"
        for _ in range(CLIP_CLEAR_BLOCKS - 1):
            minute(0)
        assert check.figures.input == "clipping"  # no flapping between loud sentences
        minute(0)
        assert check.figures.input == "ok" and check.figures.clipped_frames == 2 * CLIP_FRAMES - 1
    said = messages(caplog)
    assert said == [
        (
            "WARNING",
            f"stream hall: the input clips ({CLIP_FRAMES} of 3000 frames at full scale in the last 60 s): lower the "
            "capture gain (alsamixer, F4); clipped speech loses words",
        ),
        ("INFO", "stream hall: the input no longer clips (10 min without)"),
    ]


def test_a_capture_through_alsa_reports_a_muted_microphone(alsa_dir, caplog):
    """Real ALSA: a minute of exact zeros through the FIFO PCM (the file plugin reads as fast as it is
    written; the FIFO then stays open with nothing more, as a muted capture that goes on)."""
    zeros = int(SILENT_S * FRAMES_PER_S) + 10
    writer = FifoWriter(alsa_dir / "mic.fifo", np.tile(ZERO, zeros).tobytes())
    cap = AlsaCapture(StreamConfig(name="desk", device="vx_fifo"), AudioConfig(), FrameRing(5000))
    with caplog.at_level(logging.INFO, logger="voxnode.audio.input_check"):
        cap.start()
        try:
            assert wait_until(lambda: cap.stats.frames >= zeros, timeout=20), cap.stats
            assert cap.input_check is not None
            assert cap.input_check.figures.snapshot() == {"input": "silent", "silent_s": 60.2, "clipped_frames": 0}
        finally:
            cap.stop(time.monotonic() + 0.5)
            writer.close()
    said = messages(caplog)
    assert len(said) == 1 and said[0][0] == "WARNING" and "stream desk: the microphone has given digital" in said[0][1]
