"""`frontend.echo_cancel = "speex"` (what recognition hears): SpeexDSP's echo canceller (the MDF
adaptive filter of Xiph's libspeexdsp, BSD-3-Clause; Debian/Raspberry Pi OS package libspeexdsp1, installed by `make
deps-run`), through ctypes as audio/alsa_pcm.py does for alsa-lib: no build step, the GIL released
in each call.

Why it, measured (scripts/bench/aec.py, docs/voice-assistant.md): over the node's own speech and
music at 0 and -10 dB speech-to-echo ratio through a room path, a command spoken over the playback
kept WER 0.06-0.11 (0.059 without playback) where WebRTC AEC3 through pywebrtc-audio left 0.49-0.90
(its residual echo suppressor takes the talker out with the echo) and no canceller 0.25-0.92. Its
linear filter alone takes 19-22 dB of echo out (AEC3: 20-75 dB with its suppressor). SpeexDSP's
residual echo suppression (its preprocessor with SET_ECHO_STATE) was measured and not adopted: at
-40/-15 dB (suppress / while a talker is heard) 12 / 8 / 11 / 11 errors, at -20/-6 dB 12 / 9 / 11 /
11, against 8 / 11 / 10 / 11 without (13 commands, speech 0 / -10 dB, music 0 / -10 dB, reference
aligned, 300 ms); 10 ms frames 10 / 10 / 11 / 11.

The filter covers FILTER_MS of echo path. The reference it hears is delayed by the echo's measured
delay less a margin (frontend/echo_cancel.py), so that its taps go to the room's tail rather than to
the delay: measured 19-22 dB of echo out instead of 14-20. One 20 ms frame per call; the output is
not delayed.
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np

from voxnode.audio.format import PERIOD_FRAMES, SAMPLE_RATE

from .errors import FrontendError

# From the aligned reference (20 ms before the direct sound): 180 ms of the room's tail, by which a
# 0.3 s RT60 has decayed 36 dB. Measured (scripts/bench/aec.py, 13 commands, errors at speech 0 / -10 dB, music
# 0 / -10 dB): 200 ms 7 / 13 / 7 / 11, 300 ms 13 / 10 / 8 / 11 (it converges more slowly); unaligned
# 300 ms 10 / 15 / 12 / 11, unaligned 500 ms 13 / 17 / 11 / 15. Fewer taps cost less CPU too.
FILTER_MS = 200
SPEEX_ECHO_SET_SAMPLING_RATE = 24

_lock = threading.Lock()
_lib: ctypes.CDLL | None = None


def _speexdsp() -> ctypes.CDLL:
    global _lib
    with _lock:
        if _lib is None:
            try:
                lib = ctypes.CDLL("libspeexdsp.so.1")
            except OSError as e:
                raise FrontendError(
                    f'frontend.echo_cancel = "speex" needs libspeexdsp ({e}); install it with '
                    '`sudo apt install libspeexdsp1` (make deps-run does), or set frontend.echo_cancel = "webrtc"'
                ) from None
            lib.speex_echo_state_init.restype = ctypes.c_void_p
            lib.speex_echo_state_init.argtypes = [ctypes.c_int, ctypes.c_int]
            lib.speex_echo_state_destroy.argtypes = [ctypes.c_void_p]
            lib.speex_echo_state_reset.argtypes = [ctypes.c_void_p]
            lib.speex_echo_cancellation.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
            lib.speex_echo_ctl.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
            _lib = lib
        return _lib


class SpeexEchoCanceller:
    latency_s = 0.0

    def __init__(self) -> None:
        self._lib = _speexdsp()
        self._state = self._lib.speex_echo_state_init(PERIOD_FRAMES, FILTER_MS * SAMPLE_RATE // 1000)
        if not self._state:
            raise FrontendError("libspeexdsp could not create an echo canceller (out of memory?)")
        rate = ctypes.c_int(SAMPLE_RATE)
        self._lib.speex_echo_ctl(self._state, SPEEX_ECHO_SET_SAMPLING_RATE, ctypes.byref(rate))

    def process(self, near: np.ndarray, far: np.ndarray) -> np.ndarray:
        """int16 frames of PERIOD_FRAMES in, int16 out."""
        near = np.ascontiguousarray(near, dtype=np.int16)
        far = np.ascontiguousarray(far, dtype=np.int16)
        out = np.empty(PERIOD_FRAMES, dtype=np.int16)
        self._lib.speex_echo_cancellation(self._state, near.ctypes.data, far.ctypes.data, out.ctypes.data)
        return out

    def reset(self) -> None:
        """Forget the echo path: the reference moved against its echo, and a filter started afresh
        converges faster than one adapting its taps from the old alignment (measured: 15-19 dB of
        echo out 2-6 s after the move against 7-17)."""
        self._lib.speex_echo_state_reset(self._state)

    def __del__(self) -> None:
        state, self._state = getattr(self, "_state", None), None
        if state:
            self._lib.speex_echo_state_destroy(state)
