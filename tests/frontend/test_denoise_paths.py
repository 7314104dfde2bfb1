"""frontend.denoise: which audio the VAD hears and which audio recognition gets.

"vad": the VAD decides on the denoised audio, recognition gets the original (high-passed)
audio; "all": both denoised; "off": neither. The reference signals are computed here with
the same real components (HighPass, SpectralDenoiser) run separately on the same input.
The VAD is the real WebRTC/spectral VAD, wrapped so the test can see what it was given.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from voxnode.config import Config
from voxnode.frontend.chain import FrontEnd, FrontEndParams, with_vad
from voxnode.frontend.denoise import SpectralDenoiser
from voxnode.frontend.errors import FrontendError
from voxnode.frontend.highpass import HighPass
from voxnode.stream.params import frontend_params

pytestmark = pytest.mark.unit  # make check: needs only the venv (pyproject.toml markers)

HOP = 320


class Recording:
    """Passes every call to the real VAD and keeps what it was given."""

    def __init__(self, vad):
        self.vad = vad
        self.frames: list[np.ndarray] = []

    def is_speech(self, frame, spectrum):
        self.frames.append(np.array(frame, dtype=np.float32))
        return self.vad.is_speech(frame, spectrum)

    def rest(self, frame, spectrum):  # the noise gate vetoed the frame: the VAD still hears it
        self.frames.append(np.array(frame, dtype=np.float32))
        self.vad.rest(frame, spectrum)


def signal(n_frames: int = 120) -> list[np.ndarray]:
    """Noise (1 s, the tracker learns it) then noise + a 440 Hz tone with harmonics."""
    rng = np.random.default_rng(3)
    n = n_frames * HOP
    t = np.arange(n) / 16000
    x = 600 * rng.standard_normal(n)
    x[n // 2 :] += 3000 * (np.sin(2 * np.pi * 440 * t[n // 2 :]) + 0.5 * np.sin(2 * np.pi * 880 * t[n // 2 :]))
    return [x[i * HOP : (i + 1) * HOP].astype(np.float32) for i in range(n_frames)]


def params(**changes) -> FrontEndParams:
    return dataclasses.replace(frontend_params(Config()), **changes)


def run(mode: str, engine: str = "webrtc"):
    fe = FrontEnd(with_vad(params(denoise=mode, denoise_engine="spectral"), engine=engine))
    spy = Recording(fe.vad)
    fe.vad = spy
    outs = [fe.process(f) for f in signal()]
    hp, den = HighPass(150.0), SpectralDenoiser(-12.0, HOP)
    original = [hp.process(f) for f in signal()]
    denoised = [den.process(x) for x in original]
    return outs, spy.frames, original, denoised


@pytest.mark.parametrize("engine", ["webrtc", "spectral"])
def test_vad_mode_denoises_only_what_the_vad_hears(engine):
    outs, vad_in, original, denoised = run("vad", engine)
    for out, heard, orig, den in zip(outs, vad_in, original, denoised, strict=True):
        np.testing.assert_allclose(heard, den, atol=1e-2)  # the VAD: denoised
        np.testing.assert_allclose(out.samples, orig, atol=1e-3)  # recognition: the original
    # And the denoiser really changed the audio (noise-only frames are attenuated).
    assert np.std(np.concatenate(vad_in[10:50])) < 0.6 * np.std(np.concatenate(original[10:50]))


def test_all_mode_denoises_both_paths():
    outs, vad_in, original, denoised = run("all")
    for out, heard, den in zip(outs, vad_in, denoised, strict=True):
        np.testing.assert_allclose(heard, den, atol=1e-2)
        np.testing.assert_allclose(out.samples, den, atol=1e-2)


def test_off_leaves_both_paths_alone():
    outs, vad_in, original, _ = run("off")
    for out, heard, orig in zip(outs, vad_in, original, strict=True):
        np.testing.assert_allclose(heard, orig, atol=1e-3)
        np.testing.assert_allclose(out.samples, orig, atol=1e-3)


def test_unknown_mode_is_refused():
    with pytest.raises(FrontendError, match="denoise"):
        FrontEnd(params(denoise="loud"))
