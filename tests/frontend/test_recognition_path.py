"""frontend/recognition.py: the audio `voxnode transcribe` and a Wyoming request hand the engine is
what a live stream's front-end gives recognition, realigned, as long as the input, whatever the
block sizes. Real speech (the bundled demo clip) in real noise-like input; the reference is the
stream front-end (FrontEnd.process, frame by frame), the very component a live stream runs."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from voxnode.audio.format import PERIOD_FRAMES, SAMPLE_RATE
from voxnode.audio.wavfile import read_audio
from voxnode.config import Config
from voxnode.demo import bundled_clip
from voxnode.frontend.chain import FrontEnd
from voxnode.frontend.errors import FrontendError
from voxnode.frontend.recognition import RecognitionFilter, recognition_audio, recognition_blocks
from voxnode.stream.params import frontend_params

DEFAULTS = frontend_params(Config())


@pytest.fixture(scope="module")
def noisy() -> np.ndarray:
    """The demo clip (float32 [-1, 1]) in white noise 10 dB below its level, plus an odd tail."""
    x = read_audio(bundled_clip())
    rng = np.random.default_rng(5)
    x = x + np.float32(np.std(x) / 3) * rng.standard_normal(len(x)).astype(np.float32)
    return np.concatenate([x, x[:123]]).astype(np.float32)  # not a whole number of frames


def live_recognition_audio(params, x: np.ndarray) -> np.ndarray:
    """What a live stream's front-end hands recognition, frame by frame (the pipeline's path)."""
    fe = FrontEnd(params)
    s = x * np.float32(32768.0)
    n = len(s) // PERIOD_FRAMES
    return np.concatenate([fe.process(s[i * PERIOD_FRAMES : (i + 1) * PERIOD_FRAMES]).samples for i in range(n)])


# DeepFilterNet ran slower than real time here (9 s of CPU per pass over the 5.3 s clip at load 8, two
# passes per case: 37 s for its two enhancing cases); the first 2 s of the clip (200 of its 10 ms hops,
# still not a whole number of frames) prove the same realignment in a third of that.
DEEPFILTER_SAMPLES = 2 * SAMPLE_RATE + 123


@pytest.mark.parametrize("engine", ["spectral", "webrtc", "deepfilter"])
@pytest.mark.parametrize("mode", ["off", "all", "asr"])
def test_recognition_path_is_the_live_front_ends_realigned(noisy, mode, engine):
    params = dataclasses.replace(DEFAULTS, denoise=mode, denoise_engine=engine)
    if engine == "deepfilter":
        noisy = noisy[:DEEPFILTER_SAMPLES]
    got = recognition_audio(params, noisy)
    assert len(got) == len(noisy)
    live = live_recognition_audio(params, noisy) / np.float32(32768.0)
    lag = round(FrontEnd(params).latency_s * SAMPLE_RATE)
    assert lag == (0 if mode == "off" else {"spectral": PERIOD_FRAMES, "webrtc": 96, "deepfilter": 560}[engine])
    # The live output is `lag` late; the realigned offline one is not.
    n = len(live) - lag
    np.testing.assert_allclose(got[:n], live[lag : lag + n], atol=1e-6)


def test_vad_only_denoising_leaves_recognition_audio_high_passed_only(noisy):
    off = recognition_audio(dataclasses.replace(DEFAULTS, denoise="off"), noisy)
    vad = recognition_audio(dataclasses.replace(DEFAULTS, denoise="vad"), noisy)
    np.testing.assert_array_equal(off, vad)
    assert not np.allclose(off, noisy, atol=1e-3)  # the 150 Hz high-pass did change it


@pytest.mark.parametrize("block", [1, 100, 320, 777, 16000])
def test_any_block_sizes_give_the_same_audio(noisy, block):
    params = dataclasses.replace(DEFAULTS, denoise="all", denoise_engine="spectral")
    whole = recognition_audio(params, noisy)
    pieces = np.concatenate(
        list(recognition_blocks(params, (noisy[i : i + block] for i in range(0, len(noisy), block))))
    )
    np.testing.assert_allclose(pieces, whole, atol=1e-6)


def test_flush_gives_exactly_what_is_owed(noisy):
    f = RecognitionFilter(dataclasses.replace(DEFAULTS, denoise="all"))
    out = [f.process(noisy[:1000]), f.process(noisy[1000:1005])]
    out.append(f.flush())
    assert sum(len(o) for o in out) == 1005
    assert len(f.flush()) == 0


def test_a_recognition_only_front_end_refuses_to_run_a_vad():
    fe = FrontEnd(DEFAULTS, with_vad=False)
    assert fe.vad is None and fe.noise_floor is None
    with pytest.raises(FrontendError, match="without a VAD"):
        fe.process(np.zeros(PERIOD_FRAMES, np.float32))


def test_every_denoise_engine_in_the_table_builds_an_enhancer():
    from voxnode.config.frontend import DENOISE_ENGINES
    from voxnode.frontend.enhance import make_enhancer

    for engine, (_, name) in DENOISE_ENGINES.items():
        e = make_enhancer(engine, DEFAULTS.denoise_floor_db)
        assert type(e).__name__ == name and e.latency_s >= 0
        assert e.process(np.zeros(PERIOD_FRAMES, np.float32)).shape == (PERIOD_FRAMES,)


@pytest.mark.parametrize("mode", ["off", "vad", "all", "asr"])
def test_a_speech_only_front_end_decides_as_the_full_one_without_recognitions_denoising(noisy, mode):
    # The Wyoming request's VAD and a live stream with "asr" use it: same speech decisions, and no
    # enhancer runs where only recognition would have heard it.
    from voxnode.frontend.chain import speech_only

    params = dataclasses.replace(DEFAULTS, denoise=mode, denoise_engine="webrtc")
    full, lean = FrontEnd(params), FrontEnd(speech_only(params))
    s = noisy * np.float32(32768.0)
    frames = [s[i : i + PERIOD_FRAMES] for i in range(0, len(s) - PERIOD_FRAMES + 1, PERIOD_FRAMES)]
    assert [full.process(f).speech for f in frames] == [lean.process(f).speech for f in frames]
    assert lean.latency_s == 0.0
    assert (lean._enhancer is not None) == (mode in ("vad", "all"))
