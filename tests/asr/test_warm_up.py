"""The engine's warm-up runs the model where the first utterance would, and changes no result."""

from __future__ import annotations

import logging
import time

from voxnode.asr import default_model_dir
from voxnode.asr.whisper.engine import WhisperEngine
from voxnode.audio.wavfile import read_audio
from voxnode.config import Config
from voxnode.stream.recognition import Recognition

from .conftest import pocketsphinx_utterances

MEL_FRAMES_PER_S = 100


def test_warm_up_encodes_the_finals_window_and_leaves_the_transcript_unchanged():
    wav, _ = pocketsphinx_utterances()[0]
    audio = read_audio(wav)
    with WhisperEngine.load(default_model_dir(), num_threads=1) as cold:
        expected = cold.transcribe(audio)

    with WhisperEngine.load(default_model_dir(), num_threads=1) as warm:
        assert warm._encoder._frames is None  # nothing has run since loading
        ms = warm.warm_up()
        assert ms > 0
        # The model ran, at the finals' shortest window (where most first utterances land).
        assert warm._encoder._frames == warm.options.min_window_s * MEL_FRAMES_PER_S
        got = warm.transcribe(audio)
    assert (got.text, got.tokens, got.stop_reason) == (expected.text, expected.tokens, expected.stop_reason)
    assert got.text  # a real transcript was compared, not two empty ones


def test_recognition_warms_the_engines_it_loads(caplog):
    service = Recognition(Config(), lambda event: None)
    with caplog.at_level(logging.INFO, logger="voxnode.stream.recognition"):
        service.start()
    try:
        warmed = [r for r in caplog.records if r.getMessage().startswith("asr: warmed up in ")]
        assert len(warmed) == len(service.recognizers) >= 1
    finally:
        service.stop(time.monotonic() + 10)


def test_a_silent_warm_up_would_not_run_the_model(monkeypatch):
    """Why the warm-up is faint noise, not zeros: the engine answers a silent input without running
    the model, so a warm-up of zeros would leave the first utterance to pay the first-call work."""
    import voxnode.asr.recognizer as recognizer

    monkeypatch.setattr(recognizer, "WARM_UP_LEVEL", 0.0)
    with WhisperEngine.load(default_model_dir(), num_threads=1) as engine:
        engine.warm_up()
        assert engine._encoder._frames is None
