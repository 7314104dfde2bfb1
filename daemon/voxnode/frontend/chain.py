"""The per-stream front-end: high-pass -> STFT -> VAD (+ optional denoiser).

The high-pass runs before the VAD's STFT on purpose: strong rumble and mains
hum below 100 Hz leak through the analysis window's sidelobes into the speech
band and, because they beat, look non-stationary there; measured, HVAC noise
kept the VAD on continuously without it.  With the denoiser on, the audio is
one hop (20 ms) late relative to the VAD decision; the segmenter's pre-roll
and tail absorb that.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from voxnode.audio.format import PERIOD_FRAMES

from .denoise import SpectralDenoiser
from .errors import FrontendError
from .highpass import HighPass
from .spectrum import StftAnalyzer
from .vad import BothVad, FrameVad, SpectralVad, WebRtcVad


@dataclass(frozen=True)
class FrontEndParams:
    """Built from [frontend] and [vad] (stream/params.py), which hold the defaults."""

    highpass_hz: float  # 0 disables
    denoise: bool
    denoise_floor_db: float
    vad_engine: str  # "webrtc" | "spectral" | "both"
    vad_threshold: float  # spectral: band-mean log-likelihood ratio (noise: 0.58)
    vad_aggressiveness: int  # webrtc: 0..3
    vad_min_level_dbfs: float


@dataclass(frozen=True)
class FrontEndOutput:
    samples: np.ndarray  # float32 in int16 scale, high-passed (and denoised if on)
    speech: bool
    level_db: float  # dBFS of the high-passed frame


def make_vad(p: FrontEndParams, bins: int) -> FrameVad:
    if p.vad_engine == "spectral":
        return SpectralVad(threshold=p.vad_threshold, min_level_dbfs=p.vad_min_level_dbfs, bins=bins)
    if p.vad_engine == "webrtc":
        return WebRtcVad(p.vad_aggressiveness)
    if p.vad_engine == "both":
        return BothVad(
            SpectralVad(threshold=p.vad_threshold, min_level_dbfs=p.vad_min_level_dbfs, bins=bins),
            WebRtcVad(p.vad_aggressiveness),
        )
    raise FrontendError(f"unknown vad engine {p.vad_engine!r}")


class FrontEnd:
    def __init__(self, params: FrontEndParams, hop: int = PERIOD_FRAMES):
        self.params = params
        self._denoiser = SpectralDenoiser(params.denoise_floor_db, hop) if params.denoise else None
        self._analyzer = self._denoiser.analyzer if self._denoiser else StftAnalyzer(hop)
        self.vad = make_vad(params, self._analyzer.bins)
        self.latency_s = self._denoiser.latency_s if self._denoiser else 0.0
        # The WebRTC VAD works on samples: skip the STFT when nothing else needs it.
        self._need_spectrum = self._denoiser is not None or params.vad_engine != "webrtc"
        self._hp = HighPass(params.highpass_hz) if params.highpass_hz > 0 else None

    def process(self, samples: np.ndarray) -> FrontEndOutput:
        x = self._hp.process(samples) if self._hp is not None else np.asarray(samples, dtype=np.float32)
        spec = self._analyzer.analyze(x) if self._need_spectrum else None
        speech = self.vad.is_speech(x, spec)
        level = 10 * math.log10(float(np.dot(x, x)) / max(1, len(x)) / 32768.0**2 + 1e-12)
        if self._denoiser is not None:
            assert spec is not None  # the denoiser needs the spectrum, so it was computed
            x = self._denoiser.synth.synthesize(spec * self._denoiser.gain(spec))
        return FrontEndOutput(x, speech, level)

    def for_recognition(self, audio: np.ndarray) -> np.ndarray:
        """Utterance audio (int16 scale) -> float32 [-1, 1] for the engine."""
        return (np.asarray(audio, dtype=np.float32) / np.float32(32768.0)).astype(np.float32)
