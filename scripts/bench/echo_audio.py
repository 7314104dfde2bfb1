"""Audio for the echo-cancellation benchmark (scripts/bench/aec.py) and tests (issue 24): the node's
own playback reaching its microphone through a room.

Room path (no measured room impulse response ships in a Debian package we use, so it is built):
the loudspeaker's sound arrives `delay_ms` after the reference was captured (20-200 ms: the
playback buffer, the sound card, the air), then early reflections (6 taps over the next 2-20 ms)
and a reverberant tail, exponentially decaying noise with RT60 `rt60_s` (0.3 s: a furnished
living room), the tail `drr_db` below the direct sound (direct-to-reverberant ratio; +3 dB for a
loudspeaker a few centimetres from the microphone in the same box, lower across a room).

Playback: real speech (Asterisk prompts of another talker, the node's "answers") and real music
(the Asterisk music-on-hold tracks, as the noise benchmarks use), scaled so that the echo at the
microphone stands at a given speech-to-echo ratio (SER) against the near-end talker's active level.
"""

from __future__ import annotations

import numpy as np

RATE = 16000


def room_response(delay_ms: float, rt60_s: float = 0.3, drr_db: float = 3.0, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    d = int(delay_ms * RATE / 1000)
    n = int(rt60_s * RATE)
    t = np.arange(n) / RATE
    tail = rng.standard_normal(n) * np.exp(-6.9 * t / rt60_s)  # -60 dB at rt60_s
    tail[: int(0.002 * RATE)] = 0.0
    tail *= 10 ** (-drr_db / 20) / np.sqrt(np.sum(tail**2))  # the tail's energy against the direct sound's (1)
    h = np.zeros(d + n, dtype=np.float64)
    h[d] = 1.0
    for k, (ms, gain) in enumerate(
        zip((2.5, 4.1, 7.3, 9.8, 13.2, 18.6), (0.5, 0.4, 0.35, 0.3, 0.22, 0.18), strict=True)
    ):
        h[d + int(ms * RATE / 1000)] += gain * (-1) ** k
    h[d:] += tail
    return h


def through_room(x: np.ndarray, h: np.ndarray) -> np.ndarray:
    """x (int16 scale) as the microphone hears it from the loudspeaker: the same length, delayed."""
    n = len(x)
    size = 1 << int(np.ceil(np.log2(n + len(h))))
    y = np.fft.irfft(np.fft.rfft(x.astype(np.float64), size) * np.fft.rfft(h, size), size)[:n]
    return y.astype(np.float32)


def active_power(x: np.ndarray, frame: int = 320, below_peak_db: float = 30.0) -> float:
    """Mean power of the frames within `below_peak_db` of the loudest (speech, not its pauses)."""
    f = x[: len(x) // frame * frame].astype(np.float64).reshape(-1, frame)
    p = np.mean(f**2, axis=1)
    keep = p > p.max() * 10 ** (-below_peak_db / 10)
    return float(np.mean(p[keep]))


def echo_at(playback: np.ndarray, h: np.ndarray, near_power: float, ser_db: float) -> np.ndarray:
    """The playback's echo through `h`, scaled to `ser_db` below the near-end talker's power."""
    echo = through_room(playback, h)
    return (echo * np.sqrt(near_power / active_power(echo) * 10 ** (-ser_db / 10))).astype(np.float32)


def talker(clips: list[np.ndarray], n: int, gap_s: float = 0.6) -> np.ndarray:
    """`n` samples of `clips` one after another with `gap_s` between them, repeated as needed."""
    gap = np.zeros(int(gap_s * RATE), dtype=np.float32)
    parts: list[np.ndarray] = []
    total = 0
    while total < n:
        for c in clips:
            parts += [c.astype(np.float32), gap]
            total += len(c) + len(gap)
    return np.concatenate(parts)[:n]
