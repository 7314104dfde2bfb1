"""The per-stream front-end: STFT -> VAD (+ optional denoiser), high-pass for recognition.

Per frame, only what the VAD needs runs: one STFT, the noise tracker and the
likelihood ratio (~0.1 ms).  The high-pass for recognition is applied to the
utterance when it is handed to the engine (`for_recognition`), so a quiet
stream costs nothing for it.  With the denoiser on, the high-pass is folded
into the spectral gain and the audio is one hop (20 ms) late relative to the
VAD decision; the segmenter's pre-roll and tail absorb that.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .denoise import SpectralDenoiser
from .errors import FrontendError
from .highpass import HighPass, highpass_block
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
    samples: np.ndarray  # float32 in int16 scale (raw, or denoised + high-passed)
    speech: bool
    level_db: float  # dBFS of the frame above 100 Hz (DC offset and hum do not count)


def make_vad(p: FrontEndParams, bins: int) -> FrameVad:
    if p.vad_engine == "spectral":
        return SpectralVad(bins=bins, threshold=p.vad_threshold, min_level_dbfs=p.vad_min_level_dbfs)
    if p.vad_engine == "webrtc":
        return WebRtcVad(p.vad_aggressiveness)
    raise FrontendError(f"unknown vad engine {p.vad_engine!r}")


class FrontEnd:
    def __init__(self, params: FrontEndParams, hop: int = 320, rate: int = 16000):
        self.params = params
        self._denoiser = SpectralDenoiser(hop, params.denoise_floor_db) if params.denoise else None
        self._analyzer = self._denoiser.analyzer if self._denoiser else StftAnalyzer(hop)
        self.vad = make_vad(params, self._analyzer.bins)
        self.latency_s = self._denoiser.latency_s if self._denoiser else 0.0
        hz_per_bin = rate / self._analyzer.win_len
        self._level_lo = max(1, int(math.ceil(100 / hz_per_bin)))
        # Parseval for a sqrt-Hann window: mean square = 2 * sum|X_k|^2 / (N * sum(w^2)).
        self._level_scale = 2.0 / (self._analyzer.win_len * float(np.sum(self._analyzer.window ** 2))) / 32768.0 ** 2
        self._hp = HighPass(params.highpass_hz) if params.highpass_hz > 0 else None
        self._hp_gain = None
        if self._denoiser is not None and params.highpass_hz > 0:
            f = np.arange(self._analyzer.bins) * hz_per_bin
            self._hp_gain = 1.0 / np.sqrt(1.0 + (params.highpass_hz / np.maximum(f, 1.0)) ** 4)  # Butterworth |H|

    def process(self, samples: np.ndarray) -> FrontEndOutput:
        x = np.asarray(samples, dtype=np.float32)
        spec = self._analyzer.analyze(x)
        speech = self.vad.is_speech(x, spec)
        power = spec.real[self._level_lo:] ** 2 + spec.imag[self._level_lo:] ** 2
        level = 10 * math.log10(float(np.sum(power)) * self._level_scale + 1e-12)
        if self._denoiser is not None:
            gain = self._denoiser.gain(spec)
            if self._hp_gain is not None:
                gain = gain * self._hp_gain
            x = self._denoiser.synth.synthesize(spec * gain)
        return FrontEndOutput(x, speech, level)

    def for_recognition(self, audio: np.ndarray) -> np.ndarray:
        """Utterance audio (int16 scale) -> float32 [-1, 1] for the engine."""
        if self._hp is not None and self._denoiser is None:
            audio = highpass_block(audio, self._hp)
        return (np.asarray(audio, dtype=np.float32) / np.float32(32768.0)).astype(np.float32)
