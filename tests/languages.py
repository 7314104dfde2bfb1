"""A real recording in French for the tests of other languages, and a WER that works in any script."""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np
import pytest

from voxnode import text as script

REPO = Path(__file__).resolve().parents[1]
FR_PACKAGES = "asterisk-core-sounds-fr asterisk-core-sounds-fr-wav"  # Makefile APT_TEST
FR_SOUNDS = Path("/usr/share/asterisk/sounds/fr_CA_f_June")
# asterisk-core-sounds-fr: 3.0 s, Canadian French, the transcript's words (core-sounds-fr.txt).
FR_CLIP = FR_SOUNDS / "agent-pass.wav"
FR_TEXT = "Composez votre mot de passe suivi du dièse."
BASE_MODEL = REPO / "models" / "whisper-base"

needs_french = pytest.mark.skipif(
    not FR_CLIP.exists() or not (BASE_MODEL / "model_config.json").exists(),
    reason=f"needs a French recording ({FR_CLIP}: apt-get install {FR_PACKAGES}) and models/whisper-base",
)


def wer(reference: str, hypothesis: str) -> float:
    """Word error rate over voxnode.text.words (lower case, no punctuation, accents kept)."""
    ref, hyp = script.words(reference), script.words(hypothesis)
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
    return row[-1] / max(1, len(ref))


def french_clip_16k() -> np.ndarray:
    """The French prompt at 16 kHz, int16 scale (the package's WAV is 8 kHz)."""
    import soxr

    with wave.open(str(FR_CLIP)) as w:
        x = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32)
        rate = w.getframerate()
    return soxr.resample(x, rate, 16000).astype(np.float32)


def base_config(language: str) -> str:
    return f'[asr]\nmodel = "base"\nlanguage = "{language}"\n'
