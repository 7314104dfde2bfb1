"""`frontend.denoise_engine = "webrtc"`: WebRTC's noise suppressor (the audio processing module of
Chrome and of most voice nodes), through `pywebrtc-audio` (Apache-2.0; WebRTC is BSD-3-Clause;
aarch64 wheels). The same package brings AGC2 and the AEC3 echo canceller.

Suppression levels 0-3 take away about 6 / 12 / 18 / 21 dB of noise; `frontend.denoise_floor_db`
(the most the denoiser attenuates) picks the nearest. Its float path wants [-1, 1] (it clips
there), so frames are scaled from int16 scale and back. Latency: 96 samples (6 ms: a 256-point
FFT on a 160-sample hop), measured by cross-correlation on real speech (scripts/bench/survey_enhancers.py).
"""

from __future__ import annotations

import numpy as np

from voxnode.audio.format import SAMPLE_RATE

from .errors import FrontendError

LEVEL_DB = (-6.0, -12.0, -18.0, -21.0)  # what each suppression level takes away at most
DELAY_SAMPLES = 96
_SCALE = np.float32(32768.0)


def level_for(floor_db: float) -> int:
    return min(range(len(LEVEL_DB)), key=lambda i: abs(LEVEL_DB[i] - floor_db))


class WebRtcNoiseSuppressor:
    def __init__(self, floor_db: float):
        try:
            from pywebrtc_audio import NoiseSuppressor
        except ImportError as e:
            raise FrontendError(
                f'frontend.denoise_engine = "webrtc" needs the pywebrtc-audio package ({e}); reinstall voxnode'
            ) from None
        self.level = level_for(floor_db)
        self._ns = NoiseSuppressor(SAMPLE_RATE, 1, self.level)
        self.latency_s = DELAY_SAMPLES / SAMPLE_RATE

    def process(self, frame: np.ndarray) -> np.ndarray:
        out = self._ns.process(np.asarray(frame, dtype=np.float32) / _SCALE)
        return np.asarray(out, dtype=np.float32) * _SCALE
