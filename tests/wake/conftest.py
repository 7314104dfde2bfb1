"""The real Whisper engine for the stream tests: loaded once per test module, 2 threads."""

import pytest


@pytest.fixture(scope="module")
def engine():
    from voxnode.asr import default_model_dir
    from voxnode.asr.whisper.engine import WhisperEngine

    with WhisperEngine.load(default_model_dir(), 2) as engine:
        yield engine
