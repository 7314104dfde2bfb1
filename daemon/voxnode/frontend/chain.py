"""The per-stream front-end: high-pass -> STFT -> VAD (+ optional denoiser).

One STFT serves both the VAD and the denoiser.  With the denoiser on, the
audio handed to recognition is one hop (20 ms) late relative to the VAD
decision; the segmenter's pre-roll and tail absorb that.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .denoise import SpectralDenoiser
from .errors import FrontendError
from .highpass import HighPass
from .spectrum import StftAnalyzer
from .vad import FrameVad, SpectralVad, WebRtcVad


@dataclass(frozen=True)
class FrontEndParams:
    highpass_hz: float = 80.0  # 0 disables
    denoise: bool = False
    denoise_floor_db: float = -12.0
    vad_engine: str = "spectral"  # "spectral" | "webrtc"
    vad_threshold: float = 1.0  # spectral: band-mean log-likelihood ratio (noise: 0.58)
    vad_aggressiveness: int = 3  # webrtc: 0..3
    vad_min_level_dbfs: float = -62.0


@dataclass(frozen=True)
class FrontEndOutput:
    samples: np.ndarray  # float32 in int16 scale, for recognition
    speech: bool
    level_db: float  # dBFS of the (high-passed) frame


def make_vad(p: FrontEndParams, bins: int) -> FrameVad:
    if p.vad_engine == "spectral":
        return SpectralVad(bins=bins, threshold=p.vad_threshold, min_level_dbfs=p.vad_min_level_dbfs)
    if p.vad_engine == "webrtc":
        return WebRtcVad(p.vad_aggressiveness)
    raise FrontendError(f"unknown vad engine {p.vad_engine!r}")


class FrontEnd:
    def __init__(self, params: FrontEndParams, hop: int = 320):
        self.params = params
        self._hp = HighPass(params.highpass_hz) if params.highpass_hz > 0 else None
        self._denoiser = SpectralDenoiser(hop, params.denoise_floor_db) if params.denoise else None
        self._analyzer = self._denoiser.analyzer if self._denoiser else StftAnalyzer(hop)
        self.vad = make_vad(params, self._analyzer.bins)
        self.latency_s = self._denoiser.latency_s if self._denoiser else 0.0

    def process(self, samples: np.ndarray) -> FrontEndOutput:
        x = self._hp.process(samples) if self._hp else np.asarray(samples, dtype=np.float32)
        spec = self._analyzer.analyze(x)
        speech = self.vad.is_speech(x, spec)
        if self._denoiser is not None:
            out = self._denoiser.synth.synthesize(spec * self._denoiser.gain(spec))
        else:
            out = x
        ms = float(np.mean(x * x)) + 1e-9
        level = 10 * math.log10(ms / (32768.0 ** 2))
        return FrontEndOutput(out, speech, level)
