"""The per-stream front-end: (echo canceller) -> high-pass -> STFT -> (optional denoiser) -> VAD.

The echo cancellers (a stream with `echo_reference`, frontend/echo_cancel.py) run first: the VAD
and the noise floor hear WebRTC AEC3's output (it takes the most echo out: no utterance opens on
the node's own voice), recognition what `frontend.echo_cancel` names (by default SpeexDSP's output,
which keeps a talker over the playback that AEC3 suppresses; measured in docs/voice-assistant.md).

The high-pass runs before the VAD's STFT on purpose: strong rumble and mains
hum below 100 Hz leak through the analysis window's sidelobes into the speech
band and, because they beat, look non-stationary there; measured, HVAC noise
kept the VAD on continuously without it.

`denoise`: "off"; "vad": the VAD hears the denoised audio, recognition gets
the original (high-passed) audio; "all": both get the denoised audio; "asr":
recognition gets it, the VAD the original. `denoise_engine` picks the
enhancer (frontend/enhance.py). The denoised audio is `latency_s` late (the
spectral one: one hop, 20 ms, of overlap-add): with "vad" the VAD's decisions
are that late relative to the recognition audio, with "all" and "asr" the
audio is; the segmenter's pre-roll and tail absorb either.

The noise floor always hears the room as it is (not denoised): the gate asks
whether a frame stands above the room, which a denoiser would blur.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from voxnode.audio.format import PERIOD_FRAMES
from voxnode.config.vad import VadConfig

from .denoise import SpectralDenoiser
from .echo_cancel import EchoCanceller
from .enhance import Enhancer, make_enhancer
from .errors import FrontendError
from .highpass import HighPass
from .noise_floor import FloorReading, NoiseFloor
from .spectrum import StftAnalyzer
from .vad import FrameVad, vad_class


@dataclass(frozen=True)
class FrontEndParams:
    """Built from [frontend] and [vad] (stream/params.py), which hold the defaults."""

    highpass_hz: float  # 0 disables
    denoise: str  # DENOISE_MODES
    denoise_engine: str  # config.frontend.DENOISE_ENGINES
    denoise_floor_db: float
    vad: VadConfig  # the VAD `vad.engine` names reads its own settings from it (`from_config`)
    noise_gate: bool  # speech must also stand above the room's noise floor (noise_floor.py)
    floor_margin_db: float
    floor_spread_factor: float
    floor_window_frames: int  # vad.floor_window_ms in 20 ms frames
    echo_reference: bool  # the stream has one: the echo cancellers run (frontend/echo_cancel.py)
    echo_cancel: str  # frontend.echo_cancel: what recognition hears, "speex" | "webrtc" | "off"


DENOISE_MODES = ("off", "vad", "all", "asr")


def speech_only(p: FrontEndParams) -> FrontEndParams:
    """The parameters for a front-end asked only whether frames are speech (its samples unused): the
    denoiser stays where the VAD hears it and goes where only recognition would ("asr" -> "off",
    "all" -> "vad"), so the enhancer does not run for nothing."""
    return dataclasses.replace(p, denoise={"asr": "off", "all": "vad"}.get(p.denoise, p.denoise))


@dataclass(frozen=True)
class FrontEndOutput:
    samples: np.ndarray  # float32 in int16 scale, for recognition: high-passed (and denoised with "all")
    speech: bool  # the VAD hears a voice and (with the noise gate) the frame stands above the room
    level_db: float  # dBFS of the high-passed frame
    floor: FloorReading | None = None  # None with the noise gate off
    # What the wake word detector hears instead of the microphone: SpeexDSP's output (int16) on a
    # stream with echo_reference and echo_cancel = "speex". Measured (bench-aec): "alexa" over the
    # node's music at 0 dB, 165 real recordings, each whole: 90.3 % accepted, 70.3 % on the
    # microphone as it is, 58.2 % on AEC3's output.
    wake: np.ndarray | None = None


def with_vad(p: FrontEndParams, **changes) -> FrontEndParams:
    """`p` with [vad] settings changed (benchmarks and tests: `with_vad(p, engine="webrtc")`)."""
    return dataclasses.replace(p, vad=dataclasses.replace(p.vad, **changes))


class FrontEnd:
    """with_vad=False: the recognition path alone (`voxnode transcribe`, a Wyoming request's audio):
    no VAD and no noise floor are built, and `process` must be called with vad=False."""

    def __init__(self, params: FrontEndParams, hop: int = PERIOD_FRAMES, with_vad: bool = True):
        self.params = params
        if params.denoise not in DENOISE_MODES:
            raise FrontendError(f"unknown denoise mode {params.denoise!r}")
        on = params.denoise != "off"
        # The spectral denoiser shares its STFT with the noise floor and the spectral VAD; another
        # engine works on samples and the spectrum is taken of its output where the VAD needs one.
        self._spectral: SpectralDenoiser | None = None
        self._enhancer: Enhancer | None = None
        if on and params.denoise_engine == "spectral":
            self._spectral = SpectralDenoiser(params.denoise_floor_db, hop)
        elif on:
            self._enhancer = make_enhancer(params.denoise_engine, params.denoise_floor_db)
        self._denoise_vad = params.denoise in ("vad", "all")
        self._denoise_recognition = params.denoise in ("all", "asr")
        self._analyzer = self._spectral.analyzer if self._spectral else StftAnalyzer(hop)
        vad = vad_class(params.vad.engine)
        self.vad: FrameVad | None = vad.from_config(params.vad, self._analyzer.bins) if with_vad else None
        denoiser: SpectralDenoiser | Enhancer | None = self._spectral or self._enhancer
        self.latency_s = denoiser.latency_s if denoiser is not None and self._denoise_recognition else 0.0
        self.noise_floor = (
            NoiseFloor(
                self._analyzer.bins,
                margin_db=params.floor_margin_db,
                spread_factor=params.floor_spread_factor,
                window_frames=params.floor_window_frames,
            )
            if params.noise_gate and with_vad
            else None
        )
        spectral_vad = vad.needs_spectrum
        # A VAD that works on samples (WebRTC, Silero): the STFT is skipped when nothing else needs it.
        self._need_spectrum = self._spectral is not None or self.noise_floor is not None or spectral_vad
        # A spectral VAD behind a sample-domain enhancer needs the spectrum of the enhanced audio.
        self._vad_analyzer = StftAnalyzer(hop) if self._enhancer and self._denoise_vad and spectral_vad else None
        self._hp = HighPass(params.highpass_hz) if params.highpass_hz > 0 else None
        # echo_cancel "speex"/"off": recognition's audio, high-passed apart from what the VAD hears
        self._hp_original = HighPass(params.highpass_hz) if params.highpass_hz > 0 else None
        self.echo = EchoCanceller(params.echo_cancel) if params.echo_reference else None

    def process(self, samples: np.ndarray, vad: bool = True, reference: np.ndarray | None = None) -> FrontEndOutput:
        """One 20 ms frame. vad=False: only what recognition gets (`voxnode transcribe`, a Wyoming
        request's audio sent faster than real time); the VAD and the noise floor skip the frame.
        `reference`: the echo reference's frame that goes with it (None: it has none)."""
        original = wake = None
        if self.echo is not None:
            cancelled, heard = self.echo.process(samples, reference)
            if heard is not cancelled:  # recognition hears SpeexDSP's output or the microphone, high-passed apart
                original = self._hp_original.process(heard) if self._hp_original else heard
            if self.echo.recognition == "speex":
                wake = np.clip(heard, -32768, 32767).astype(np.int16)
            samples = cancelled
        x = self._hp.process(samples) if self._hp is not None else np.asarray(samples, dtype=np.float32)
        level = 10 * math.log10(float(np.dot(x, x)) / max(1, len(x)) / 32768.0**2 + 1e-12)
        plain = x if original is None else original  # what recognition hears without a denoiser
        if not vad and not self._denoise_recognition:
            return FrontEndOutput(plain, False, level)
        spec = self._analyzer.analyze(x) if self._need_spectrum else None
        floor = None
        if vad and self.noise_floor is not None:
            assert spec is not None  # the floor needs the spectrum, so it was computed
            floor = self.noise_floor.update(spec.real**2 + spec.imag**2)  # the room as it is, not denoised
        out, vad_in, vad_spec = plain, x, spec
        if self._spectral is not None:
            assert spec is not None  # the denoiser needs the spectrum, so it was computed
            denoised_spec = spec * self._spectral.gain(spec)
            denoised = self._spectral.synth.synthesize(denoised_spec)
            if self._denoise_vad:
                vad_in, vad_spec = denoised, denoised_spec
            if self._denoise_recognition:
                out = denoised
        elif self._enhancer is not None:
            denoised = self._enhancer.process(x)
            if self._denoise_vad:
                vad_in = denoised
                vad_spec = self._vad_analyzer.analyze(denoised) if self._vad_analyzer is not None else None
            if self._denoise_recognition:
                out = denoised
        if not vad:
            return FrontEndOutput(out, False, level)
        if self.vad is None:
            raise FrontendError("this front-end was built without a VAD (with_vad=False)")
        if floor is not None and not floor.above:
            # The gate vetoes the frame whatever the VAD would say: the VAD keeps up with the audio
            # but a neural one skips its model call. In a steady room most idle frames are here.
            self.vad.rest(vad_in, vad_spec)
            speech = False
        else:
            speech = self.vad.is_speech(vad_in, vad_spec)
        return FrontEndOutput(out, speech, level, floor, wake)

    def room(self) -> dict:
        """The noise floor (speech band, dBFS) and its octave spectrum, for health reports; {} before
        any audio or without the noise gate."""
        nf = self.noise_floor
        if nf is None or nf.frames == 0:
            return {}
        room: dict = {"noise_floor_dbfs": round(nf.floor_dbfs, 1)}
        spectrum = nf.spectrum_dbfs()  # sampled less often than the level: may not have begun yet
        if spectrum:
            room["noise_spectrum_dbfs"] = spectrum
        return room

    def echo_figures(self) -> dict:
        """The echo canceller's figures (a stream with echo_reference), for health reports; {} without."""
        ec = self.echo
        if ec is None:
            return {}
        return {
            "echo_erle_db": ec.erle_db,
            "echo_delay_ms": ec.delay.delay_ms,
            "echo_playing_frames": ec.playing_frames,
            "echo_rested_frames": ec.rested_frames,
        }

    def for_recognition(self, audio: np.ndarray) -> np.ndarray:
        """Utterance audio (int16 scale) -> float32 [-1, 1] for the engine."""
        return (np.asarray(audio, dtype=np.float32) / np.float32(32768.0)).astype(np.float32)
