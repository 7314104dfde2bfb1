"""Scripted input for the segmenter tests (test_segmenter, test_endpoint): small parameters in frames,
and frames whose VAD decision the test gives."""

from __future__ import annotations

import numpy as np

from voxnode.stream.segmenter import Chunk, SegmenterParams

PARAMS = SegmenterParams(
    pre_roll_frames=5,
    onset_frames=3,
    onset_window_frames=5,
    tail_frames=4,
    hangover_frames=10,
    min_speech_frames=6,
    max_utterance_frames=60,
    cut_search_frames=20,
)


def frame(i: int, speech: bool, level_db: float | None = None) -> Chunk:
    """Frame `i` of a script, 20 ms after frame i-1; every sample is `i`, so audio boundaries are
    checkable. Level: -20 dBFS for speech, -60 for silence, unless given."""
    if level_db is None:
        level_db = -20.0 if speech else -60.0
    return Chunk(np.full(320, i, dtype=np.float32), i, i * 0.02, 1000 + i * 0.02, bool(speech), level_db)
