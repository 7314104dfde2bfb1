"""Streaming STFT analysis and noise-spectrum tracking (shared by denoiser and VAD).

One 20 ms hop per input frame, 40 ms sqrt-Hann window (50 % overlap): the
sqrt-Hann pair gives perfect reconstruction on overlap-add, so a gain of 1
returns the input delayed by exactly one hop (20 ms look-ahead, the only
latency the denoiser adds).
"""

from __future__ import annotations

import numpy as np

from voxnode.audio.format import PERIOD_FRAMES

from .errors import FrontendError


class StftAnalyzer:
    """Turns consecutive hop-sized frames into complex spectra of the last window."""

    def __init__(self, hop: int = PERIOD_FRAMES):
        self.hop = hop
        self.win_len = 2 * hop
        self.window = np.sqrt(np.hanning(self.win_len + 1)[:-1]).astype(np.float32)
        self._buf = np.zeros(self.win_len, dtype=np.float32)
        self.bins = self.win_len // 2 + 1

    def analyze(self, frame: np.ndarray) -> np.ndarray:
        if len(frame) != self.hop:
            raise FrontendError(f"frame has {len(frame)} samples, expected {self.hop}")
        self._buf[: self.hop] = self._buf[self.hop :]
        self._buf[self.hop :] = frame
        return np.fft.rfft(self._buf * self.window)


class StftSynthesizer:
    """Overlap-adds modified spectra; emits one hop per call, one hop late."""

    def __init__(self, analyzer: StftAnalyzer):
        self.hop = analyzer.hop
        self.window = analyzer.window
        self._ola = np.zeros(analyzer.win_len, dtype=np.float32)

    def synthesize(self, spectrum: np.ndarray) -> np.ndarray:
        block = np.fft.irfft(spectrum, n=len(self.window)).astype(np.float32) * self.window
        self._ola += block
        out = self._ola[: self.hop].copy()
        self._ola[: self.hop] = self._ola[self.hop :]
        self._ola[self.hop :] = 0
        return out


class NoiseTracker:
    """Minimum-statistics noise power tracker (after Martin 2001, simplified).

    The noise floor is the minimum of the smoothed power over a sliding
    window (8 sub-windows, ~1.6 s), times a bias factor: speech rarely fills
    one frequency bin continuously for that long, so the minimum sees the
    noise between syllables even while someone talks.  Bins that are clearly
    above the floor (speech) do not update the refined estimate, the others
    follow it quickly.  Worst case, after noise gets louder the estimate
    catches up within one window (~1.6 s); it follows a drop at once.
    """

    def __init__(
        self,
        bins: int,
        subwindow_frames: int = 10,
        subwindows: int = 8,
        smoothing: float = 0.7,
        bias: float = 2.0,
        presence_ratio: float = 3.0,
        noise_alpha: float = 0.9,
    ):
        self._smooth = smoothing
        self._bias = bias
        self._ratio = presence_ratio
        self._alpha = noise_alpha
        self._sub_len = subwindow_frames
        self._subs: list[np.ndarray] = []
        self._nsubs = subwindows
        self._cur_min = np.full(bins, np.inf)
        self._subs_min = np.full(bins, np.inf)
        self._p = np.zeros(bins)
        self.noise = np.zeros(bins)
        self._frames = 0

    def update(self, power: np.ndarray) -> np.ndarray:
        """Feed |X|^2 of one hop; returns the current noise power estimate."""
        if self._frames == 0:
            self._p = power.copy()
            self.noise = power.copy()
        self._frames += 1
        self._p = self._smooth * self._p + (1 - self._smooth) * power
        np.minimum(self._cur_min, self._p, out=self._cur_min)
        floor = np.minimum(self._cur_min, self._subs_min)
        if self._frames % self._sub_len == 0:
            # Sub-window boundary: the only time the window minimum is recomputed.
            self._subs.append(self._cur_min)
            if len(self._subs) > self._nsubs:
                self._subs.pop(0)
            self._subs_min = np.minimum.reduce(self._subs)
            self._cur_min = np.full_like(self._cur_min, np.inf)
        floor = self._bias * floor
        quiet = self._p < self._ratio * floor
        self.noise = np.where(quiet, self._alpha * self.noise + (1 - self._alpha) * self._p, self.noise)
        # Never above what minimum statistics allow: stops leaked speech
        # (or a noise that went away) from lingering in the estimate.
        self.noise = np.minimum(self.noise, self._ratio * floor)
        return self.noise

    @property
    def warmed_up(self) -> bool:
        return self._frames >= self._sub_len
