"""Cutting long recordings into windows the engine can take, at pauses.

Whisper hears at most 30 s at once. Cutting blindly at 30 s splits words, so
each cut goes at the quietest moment of the last stretch before the limit.
"""

from __future__ import annotations

import numpy as np

from voxnode.audio.format import PERIOD_FRAMES, SAMPLE_RATE

FRAME = PERIOD_FRAMES  # energy frames
SMOOTH_FRAMES = 10  # 200 ms: a pause, not the gap between two phonemes
MAX_WINDOW_S = 28.0  # below the engine's 30 s, so its end-of-speech padding still fits
SEARCH_S = 10.0  # look for the pause in the last 10 s before the limit


def frame_energy(audio: np.ndarray) -> np.ndarray:
    n = len(audio) // FRAME
    frames = audio[: n * FRAME].reshape(n, FRAME).astype(np.float64)
    energy = (frames**2).mean(axis=1)
    kernel = np.ones(SMOOTH_FRAMES) / SMOOTH_FRAMES
    return np.convolve(energy, kernel, mode="same")


def split_at_pauses(
    audio: np.ndarray, max_s: float = MAX_WINDOW_S, search_s: float = SEARCH_S
) -> list[tuple[int, int]]:
    """[(start, end)] sample ranges covering `audio`, each at most `max_s` long, cut at the quietest points."""
    total = len(audio)
    max_len = int(max_s * SAMPLE_RATE)
    if total <= max_len:
        return [(0, total)]
    energy = frame_energy(audio)
    spans = []
    start = 0
    while total - start > max_len:
        lo = (start + max_len - int(search_s * SAMPLE_RATE)) // FRAME
        hi = (start + max_len) // FRAME
        lo = max(lo, start // FRAME + 1)
        quietest = lo + int(np.argmin(energy[lo:hi]))
        cut = quietest * FRAME + FRAME // 2
        spans.append((start, cut))
        start = cut
    spans.append((start, total))
    return spans
