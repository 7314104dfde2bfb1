"""scripts/bench/speech_corpus.py: which Asterisk prompts a venv gives (G.722 at 16 kHz, or the 8 kHz WAVs
upsampled) is said once and recorded, because the wake benchmark's false accepts depend on it (issue 24:
alexa had 3 false accepts in 7 hours on the narrowband prompts, 15 on the wideband ones)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from scripts.bench import speech_corpus as sc

PROMPT = "auth-thankyou"
needs_prompts = pytest.mark.skipif(
    not (sc.ASTERISK_SOUNDS / f"{PROMPT}.wav").exists() or not (sc.ASTERISK_SOUNDS / f"{PROMPT}.g722").exists(),
    reason="needs asterisk-core-sounds-en-wav and -g722 (make deps-corpus)",
)


def _share_above_4khz(x: np.ndarray) -> float:
    power = np.abs(np.fft.rfft(x.astype(np.float64))) ** 2
    freqs = np.fft.rfftfreq(len(x), 1 / sc.RATE)
    return float(power[freqs > 4200].sum() / power.sum())


@pytest.fixture
def fresh_decoder():
    sc.g722_module.cache_clear()
    yield
    sc.g722_module.cache_clear()


@needs_prompts
def test_without_g722_the_prompts_are_narrowband_and_it_is_said_once(monkeypatch, capsys, fresh_decoder):
    monkeypatch.setitem(sys.modules, "G722", None)  # `import G722` raises ImportError, as in .venv
    assert sc.asterisk_band() == "narrowband"
    audio = sc._asterisk_audio(PROMPT)
    assert audio is not None and _share_above_4khz(audio) < 1e-4  # the 8 kHz WAV: nothing above its band
    sc._asterisk_audio("auth-incorrect")
    assert sc.asterisk_band() == "narrowband"
    assert capsys.readouterr().err.count("g722 package is not installed") == 1


@needs_prompts
def test_with_g722_the_prompts_are_wideband(fresh_decoder):
    pytest.importorskip("G722", reason="the g722 package (.venv-bench)")
    assert sc.asterisk_band() == "wideband"
    audio = sc._asterisk_audio(PROMPT)
    assert audio is not None and _share_above_4khz(audio) > 1e-3
