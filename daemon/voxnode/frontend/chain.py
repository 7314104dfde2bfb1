"""The per-stream front-end: high-pass -> STFT -> (optional denoiser) -> VAD.

The high-pass runs before the VAD's STFT on purpose: strong rumble and mains
hum below 100 Hz leak through the analysis window's sidelobes into the speech
band and, because they beat, look non-stationary there; measured, HVAC noise
kept the VAD on continuously without it.

`denoise`: "off"; "vad": the VAD hears the denoised audio, recognition gets
the original (high-passed) audio; "all": both get the denoised audio. The
denoised audio is one hop (20 ms) late (overlap-add): with "vad" the VAD's
decisions are 20 ms late relative to the recognition audio, with "all" the
audio is; the segmenter's pre-roll and tail absorb either.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from voxnode.audio.format import PERIOD_FRAMES

from .denoise import SpectralDenoiser
from .errors import FrontendError
from .highpass import HighPass
from .noise_floor import FloorReading, NoiseFloor
from .silero_vad import SileroVad
from .spectrum import StftAnalyzer
from .vad import BothVad, FrameVad, SpectralVad, WebRtcVad


@dataclass(frozen=True)
class FrontEndParams:
    """Built from [frontend] and [vad] (stream/params.py), which hold the defaults."""

    highpass_hz: float  # 0 disables
    denoise: str  # DENOISE_MODES
    denoise_floor_db: float
    vad_engine: str  # "webrtc" | "spectral" | "both" | "silero"
    vad_threshold: float  # spectral: band-mean log-likelihood ratio (noise: 0.58)
    vad_aggressiveness: int  # webrtc: 0..3
    vad_silero_threshold: float  # silero: speech probability that starts speech
    vad_min_level_dbfs: float
    noise_gate: bool  # speech must also stand above the room's noise floor (noise_floor.py)
    floor_margin_db: float
    floor_spread_factor: float
    floor_window_s: float


DENOISE_MODES = ("off", "vad", "all")


@dataclass(frozen=True)
class FrontEndOutput:
    samples: np.ndarray  # float32 in int16 scale, for recognition: high-passed (and denoised with "all")
    speech: bool  # the VAD hears a voice and (with the noise gate) the frame stands above the room
    level_db: float  # dBFS of the high-passed frame
    floor: FloorReading | None = None  # None with the noise gate off


def make_vad(p: FrontEndParams, bins: int) -> FrameVad:
    if p.vad_engine == "spectral":
        return SpectralVad(threshold=p.vad_threshold, min_level_dbfs=p.vad_min_level_dbfs, bins=bins)
    if p.vad_engine == "webrtc":
        return WebRtcVad(p.vad_aggressiveness)
    if p.vad_engine == "silero":
        return SileroVad(p.vad_silero_threshold)
    if p.vad_engine == "both":
        return BothVad(
            SpectralVad(threshold=p.vad_threshold, min_level_dbfs=p.vad_min_level_dbfs, bins=bins),
            WebRtcVad(p.vad_aggressiveness),
        )
    raise FrontendError(f"unknown vad engine {p.vad_engine!r}")


class FrontEnd:
    def __init__(self, params: FrontEndParams, hop: int = PERIOD_FRAMES):
        self.params = params
        if params.denoise not in DENOISE_MODES:
            raise FrontendError(f"unknown denoise mode {params.denoise!r}")
        on = params.denoise != "off"
        self._denoiser = SpectralDenoiser(params.denoise_floor_db, hop) if on else None
        self._denoise_recognition = params.denoise == "all"
        self._analyzer = self._denoiser.analyzer if self._denoiser else StftAnalyzer(hop)
        self.vad = make_vad(params, self._analyzer.bins)
        self.latency_s = self._denoiser.latency_s if self._denoiser and self._denoise_recognition else 0.0
        self.noise_floor = (
            NoiseFloor(
                self._analyzer.bins,
                margin_db=params.floor_margin_db,
                spread_factor=params.floor_spread_factor,
                window_s=params.floor_window_s,
            )
            if params.noise_gate
            else None
        )
        # The WebRTC and Silero VADs work on samples: skip the STFT when nothing else needs it.
        self._need_spectrum = (
            self._denoiser is not None or self.noise_floor is not None or params.vad_engine not in ("webrtc", "silero")
        )
        self._hp = HighPass(params.highpass_hz) if params.highpass_hz > 0 else None

    def process(self, samples: np.ndarray) -> FrontEndOutput:
        x = self._hp.process(samples) if self._hp is not None else np.asarray(samples, dtype=np.float32)
        spec = self._analyzer.analyze(x) if self._need_spectrum else None
        level = 10 * math.log10(float(np.dot(x, x)) / max(1, len(x)) / 32768.0**2 + 1e-12)
        floor = None
        if self.noise_floor is not None:
            assert spec is not None  # the floor needs the spectrum, so it was computed
            floor = self.noise_floor.update(spec.real**2 + spec.imag**2)  # the room as it is, not denoised
        out, vad_in, vad_spec = x, x, spec
        if self._denoiser is not None:
            assert spec is not None  # the denoiser needs the spectrum, so it was computed
            vad_spec = spec * self._denoiser.gain(spec)
            vad_in = self._denoiser.synth.synthesize(vad_spec)
            if self._denoise_recognition:
                out = vad_in
        if floor is not None and not floor.above:
            # The gate vetoes the frame whatever the VAD would say: the VAD keeps up with the audio
            # but a neural one skips its model call. In a steady room most idle frames are here.
            self.vad.rest(vad_in, vad_spec)
            speech = False
        else:
            speech = self.vad.is_speech(vad_in, vad_spec)
        return FrontEndOutput(out, speech, level, floor)

    def for_recognition(self, audio: np.ndarray) -> np.ndarray:
        """Utterance audio (int16 scale) -> float32 [-1, 1] for the engine."""
        return (np.asarray(audio, dtype=np.float32) / np.float32(32768.0)).astype(np.float32)
