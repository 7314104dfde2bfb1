"""`[asr] engine` chooses the backend module from the one table of engines (config/asr.py)."""

from __future__ import annotations

import pytest

from voxnode.asr.backends import recognizer_class
from voxnode.asr.recognizer import Recognizer
from voxnode.config import parse_config
from voxnode.config.asr import ENGINES
from voxnode.errors import ConfigError

pytestmark = pytest.mark.unit  # make check: needs only the venv (pyproject.toml markers)


def test_every_engine_in_the_table_is_a_recognizer_the_config_accepts():
    for name in ENGINES:
        cls = recognizer_class(name)
        assert issubclass(cls, Recognizer), cls
        assert parse_config(f'[asr]\nengine = "{name}"\n').asr.engine == name


def test_an_unknown_engine_is_refused_naming_the_key_and_the_choices():
    with pytest.raises(ConfigError, match=r'asr.engine = "vosk": allowed values are "whisper-litert"'):
        parse_config('[asr]\nengine = "vosk"\n')
    with pytest.raises(ConfigError, match='asr.engine = "vosk": unknown engine; known: whisper-litert'):
        recognizer_class("vosk")


def test_nothing_outside_asr_imports_whisper_internals():
    """Engine-neutral code sees the Recognizer interface and its declared capabilities only."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "daemon" / "voxnode"
    offenders = []
    for path in root.rglob("*.py"):
        if path.is_relative_to(root / "asr"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            if any(n.startswith("voxnode.asr.whisper") for n in names):
                offenders.append(f"{path.relative_to(root)}:{node.lineno}")
    assert not offenders, offenders
