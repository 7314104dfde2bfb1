"""What of a decode is published (stream/speech_text.py), and Wyoming taking it, and its partials'
settings, from the microphones' own builders (stream/params.py)."""

from __future__ import annotations

import dataclasses

import pytest

from voxnode.asr.recognizer import TranscriptResult
from voxnode.config import Config
from voxnode.stream.params import partial_params, pipeline_params, speech_text
from voxnode.stream.partials import PartialParams
from voxnode.stream.speech_text import SpeechText
from voxnode.wyoming_stt.server import request_params

pytestmark = pytest.mark.unit  # make check: needs only the venv (pyproject.toml markers)


def result(text: str, no_speech_prob: float = 0.01, confidence: float = -0.2) -> TranscriptResult:
    return TranscriptResult(text, [], confidence, no_speech_prob, 1.0, 1.0, 1.0)


def test_the_text_as_published_or_nothing():
    speech = speech_text(Config())
    assert speech == SpeechText(no_speech_threshold=0.6, min_confidence=-1.5)  # [stream]'s defaults
    assert speech.of(result("  Turn on  the lights. [BLANK_AUDIO]")) == "Turn on the lights."
    assert speech.of(result("[BLANK_AUDIO] (music)")) == ""  # only annotations
    assert speech.of(result("uh", confidence=-1.6)) == ""  # below stream.min_confidence
    assert speech.of(result("thank you", no_speech_prob=0.9, confidence=-1.2)) == ""  # no speech, unsure
    # A sure sentence is kept whatever the no-speech probability (asr/noise.py).
    assert speech.of(result("Please hold.", no_speech_prob=0.9, confidence=-0.3)) == "Please hold."


def test_wyoming_takes_the_microphones_settings_from_the_same_builders():
    c = Config()
    c = dataclasses.replace(
        c,
        stream=dataclasses.replace(
            c.stream, partials=False, partial_interval_ms=700, min_confidence=-0.8, no_speech_threshold=0.5
        ),
    )
    wyoming, mic = request_params(c), pipeline_params(c, "mic")
    assert wyoming.speech == mic.speech == SpeechText(0.5, -0.8)
    assert wyoming.partials == mic.partials == partial_params(c) == PartialParams(False, 0.7, 0.8, 0.25)
    assert wyoming.frontend == pipeline_params(c).frontend
