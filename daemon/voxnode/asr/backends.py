"""`[asr] engine` -> the backend module that implements it.

A backend is imported only when chosen: its runtime (LiteRT, an NPU SDK, ...) loads native
libraries that other installs may lack. To add one: write asr/<name>.py with a `Recognizer`
subclass and add a line to ENGINES in config/asr.py (name -> module, class).
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
from typing import TYPE_CHECKING

from voxnode.asr.recognizer import Recognizer
from voxnode.config.asr import ENGINES
from voxnode.config.wording import toml_value
from voxnode.errors import ConfigError
from voxnode.models.runtime import default_num_threads

if TYPE_CHECKING:
    from voxnode.config.asr import AsrConfig

log = logging.getLogger(__name__)


def recognizer_class(engine: str) -> type[Recognizer]:
    try:
        module_name, class_name = ENGINES[engine]
    except KeyError:
        raise ConfigError(f"asr.engine = {toml_value(engine)}: unknown engine; known: {', '.join(ENGINES)}") from None
    cls = getattr(importlib.import_module(module_name), class_name)
    if not (isinstance(cls, type) and issubclass(cls, Recognizer)):
        raise TypeError(f"{module_name}.{class_name} is not a Recognizer")
    return cls


def load_recognizer(config: AsrConfig) -> Recognizer:
    """The model `[asr]` names, loaded; raises ModelError saying what is wrong."""
    return recognizer_class(config.engine).from_config(config)


def load_recognizers(config: AsrConfig, count: int) -> list[Recognizer]:
    """`count` instances of the model: an instance decodes one utterance at a time, so each decode
    worker has its own (~50 MB each; see docs/benchmarks.md). `asr.num_threads = 0` shares the cores
    between them (models/runtime.default_num_threads)."""
    if config.num_threads == 0:
        config = dataclasses.replace(config, num_threads=default_num_threads(engines=count))
    return [load_recognizer(config) for _ in range(count)]
