"""`[asr] engine` chooses the backend module; the config's list and the backend table agree."""

from __future__ import annotations

import pytest

from voxnode.asr.backends import BACKENDS, recognizer_class
from voxnode.asr.recognizer import Recognizer
from voxnode.config import parse_config
from voxnode.config.asr import ENGINES
from voxnode.errors import ConfigError

pytestmark = pytest.mark.unit  # make check: needs only the venv (pyproject.toml markers)


def test_every_configurable_engine_has_a_backend_and_no_other():
    assert set(ENGINES) == set(BACKENDS)
    for name in ENGINES:
        cls = recognizer_class(name)
        assert issubclass(cls, Recognizer), cls


def test_an_unknown_engine_is_refused_naming_the_key_and_the_choices():
    with pytest.raises(ConfigError, match=r'asr.engine = "vosk": allowed values are "whisper-litert"'):
        parse_config('[asr]\nengine = "vosk"\n')
    with pytest.raises(ConfigError, match="asr.engine = 'vosk': unknown engine; known: whisper-litert"):
        recognizer_class("vosk")
