"""Frame-level voice activity detectors (one decision per 20 ms frame): the `FrameVad` interface and
three of the four `vad.engine` choices (config/vad.py VADS names them all):

* ``spectral``: numpy statistical VAD (Sohn et al. 1999 likelihood ratio over
  the speech band 200-4000 Hz, noise from the MCRA tracker).
* ``webrtc``: the WebRTC GMM VAD via `webrtcvad-wheels` (aarch64 wheels).
* ``both``: speech where both of those agree.
* ``silero`` (the default) is in silero_vad.py.

Each reads its own settings from `[vad]` (`from_config`). They only say "this frame looks like
speech"; onset confirmation, hangover and minimum lengths belong to the segmenter.
"""

from __future__ import annotations

import importlib
from typing import ClassVar, Protocol, Self

import numpy as np

from voxnode.audio.format import PERIOD_FRAMES, SAMPLE_RATE
from voxnode.config.vad import VADS, VadConfig
from voxnode.config.wording import toml_value

from .errors import FrontendError
from .spectrum import NoiseTracker


class FrameVad(Protocol):
    needs_spectrum: ClassVar[bool]  # it reads the frame's STFT (else the front-end may skip it)

    @classmethod
    def from_config(cls, vad: VadConfig, bins: int) -> Self:
        """Built from `[vad]`, reading only its own settings; `bins`: the STFT's bins per frame."""

    def is_speech(self, frame: np.ndarray, spectrum: np.ndarray | None) -> bool:
        """`spectrum` is the frame's STFT, or None when no detector in use needs it."""

    def rest(self, frame: np.ndarray, spectrum: np.ndarray | None) -> None:
        """The frame is not speech whatever the detector says (the noise gate vetoes it): keep what
        must follow the audio, skip the rest of the work."""


class SpectralVad:
    """Likelihood-ratio VAD on the STFT the front-end already computes.

    Per bin of the speech band, with posterior SNR g = |X|^2 / noise, the
    log-likelihood ratio of "speech" vs "noise" under a Gaussian model with
    the maximum-likelihood a-priori SNR is g - ln(g) - 1.  Its band mean is
    0.58 (Euler's constant) for any stationary noise, whatever its level or
    colour, and grows quickly with speech: a level-free threshold.
    """

    needs_spectrum: ClassVar[bool] = True

    def __init__(
        self,
        *,
        threshold: float,
        min_level_dbfs: float,
        bins: int = PERIOD_FRAMES + 1,
        rate: int = SAMPLE_RATE,
        band_hz: tuple[float, float] = (200.0, 4000.0),
    ):
        hz_per_bin = rate / 2 / (bins - 1)
        self._lo = int(band_hz[0] / hz_per_bin)
        self._hi = int(band_hz[1] / hz_per_bin) + 1
        self.tracker = NoiseTracker(bins)
        self._threshold = threshold
        # Below this band level nothing is speech a recogniser could use, and
        # a digitally silent input must not trigger on the first dither.
        full_scale = (32768.0**2) * (bins - 1) / 2
        self._min_power = full_scale * (self._hi - self._lo) * 10 ** (min_level_dbfs / 10)
        self.last_llr = 0.0

    @classmethod
    def from_config(cls, vad: VadConfig, bins: int) -> SpectralVad:
        return cls(threshold=vad.threshold, min_level_dbfs=vad.min_level_dbfs, bins=bins)

    def is_speech(self, frame: np.ndarray, spectrum: np.ndarray | None) -> bool:
        if spectrum is None:
            raise FrontendError("the spectral VAD needs the frame's spectrum")
        power = spectrum.real**2 + spectrum.imag**2
        noise = self.tracker.update(power)[self._lo : self._hi] + 1e-3
        p = power[self._lo : self._hi]
        g = np.minimum(p / noise, 1e6) + 1e-9
        self.last_llr = float(np.mean(g - np.log(g) - 1))
        if not self.tracker.warmed_up:
            return False
        return self.last_llr > self._threshold and float(np.sum(p)) > self._min_power

    def rest(self, frame: np.ndarray, spectrum: np.ndarray | None) -> None:
        self.is_speech(frame, spectrum)  # the noise tracker must see every frame


class WebRtcVad:
    """Adapter for the WebRTC VAD; aggressiveness 0 (lenient) .. 3 (strict)."""

    needs_spectrum: ClassVar[bool] = False

    def __init__(self, aggressiveness: int, rate: int = SAMPLE_RATE):
        try:
            import webrtcvad  # optional dependency: pip install webrtcvad-wheels
        except ImportError as exc:  # pragma: no cover - depends on install
            raise FrontendError(
                'vad.engine = "webrtc": needs the webrtcvad-wheels package; pip install webrtcvad-wheels'
            ) from exc
        self._vad = webrtcvad.Vad(aggressiveness)
        self._rate = rate

    @classmethod
    def from_config(cls, vad: VadConfig, bins: int) -> WebRtcVad:
        return cls(vad.aggressiveness)

    def is_speech(self, frame: np.ndarray, spectrum: np.ndarray | None) -> bool:
        pcm = np.clip(frame, -32768, 32767).astype("<i2").tobytes()
        return bool(self._vad.is_speech(pcm, self._rate))

    def rest(self, frame: np.ndarray, spectrum: np.ndarray | None) -> None:
        self.is_speech(frame, spectrum)  # its noise model adapts on every frame; it is cheap


class BothVad:
    """Speech only where both detectors agree: WebRTC's GMM is steadier in
    broadband noise, the likelihood ratio rejects rumble and hum that WebRTC
    takes for voice."""

    needs_spectrum: ClassVar[bool] = True

    def __init__(self, first: FrameVad, second: FrameVad):
        self._a, self._b = first, second

    @classmethod
    def from_config(cls, vad: VadConfig, bins: int) -> BothVad:
        return cls(SpectralVad.from_config(vad, bins), WebRtcVad.from_config(vad, bins))

    def is_speech(self, frame: np.ndarray, spectrum: np.ndarray | None) -> bool:
        a = self._a.is_speech(frame, spectrum)  # both always run: the spectral one tracks noise every frame
        b = self._b.is_speech(frame, spectrum)
        return a and b

    def rest(self, frame: np.ndarray, spectrum: np.ndarray | None) -> None:
        self._a.rest(frame, spectrum)
        self._b.rest(frame, spectrum)


def vad_class(engine: str) -> type[FrameVad]:
    """The class `vad.engine` names (config/vad.py VADS), imported now: Silero loads LiteRT, WebRTC's
    needs the webrtcvad-wheels package."""
    try:
        module, name = VADS[engine]
    except KeyError:
        raise FrontendError(f"vad.engine = {toml_value(engine)}: unknown VAD; known: {', '.join(VADS)}") from None
    return getattr(importlib.import_module(module), name)
