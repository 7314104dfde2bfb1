"""The real Whisper engine for the stream tests: loaded once per test module, 2 threads."""

import pytest


@pytest.fixture(scope="module")
def engine():
    from voxnode.asr import default_model_dir
    from voxnode.asr.whisper.engine import WhisperEngine

    with WhisperEngine.load(default_model_dir(), 2) as engine:
        yield engine


@pytest.fixture(scope="module")
def prompts():
    """Asterisk's English prompts (real speech with transcripts) for the echo tests' near-end commands."""
    from scripts.bench import speech_corpus as sc

    ps = list(sc.asterisk())
    if len(ps) < 12:
        pytest.skip("needs asterisk-core-sounds-en (make deps-test)")
    return ps
