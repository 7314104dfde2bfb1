"""`voxnode adapt --denoise asr` (issue 22): training hears what a node with `[frontend] denoise = "asr"` hears,
the default engine at its default limit; off (the default) leaves the front-end as it was."""

from __future__ import annotations

import numpy as np

from scripts.adapt.__main__ import frontend_config
from scripts.bench import audio_corpus
from voxnode.config import Config
from voxnode.frontend.recognition import recognition_audio
from voxnode.stream.params import frontend_params

RATE = 16000


def _power_db(x: np.ndarray) -> float:
    return 10 * float(np.log10(np.mean(x.astype(np.float64) ** 2) + 1e-20))


def test_off_is_the_default_front_end() -> None:
    assert frontend_params(frontend_config("off")) == frontend_params(Config())


def test_asr_is_the_enhancers_recognition_audio() -> None:
    params = frontend_params(frontend_config("asr"))
    default = Config().frontend
    assert (params.denoise, params.denoise_engine, params.denoise_floor_db) == (
        "asr",
        default.denoise_engine,
        default.denoise_floor_db,
    )
    noise = audio_corpus.noise("white", 3 * RATE, seed=5) * np.float32(0.05)
    plain, enhanced = recognition_audio(frontend_params(Config()), noise), recognition_audio(params, noise)
    tail = slice(RATE, None)  # past the enhancer's first second
    # DeepFilterNet at its 12 dB limit takes steady white noise down by about that much; the high-pass alone does not
    assert _power_db(plain[tail]) - _power_db(noise[tail]) > -1.0
    assert 8.0 < _power_db(plain[tail]) - _power_db(enhanced[tail]) < 14.0
