"""Speech enhancement engines (`frontend.denoise_engine`): one interface, one module per library.

An engine takes 20 ms frames (320 samples, float32 in int16 scale) and gives back 20 ms frames,
`latency_s` late. Engines that need other frame sizes or rates buffer inside. Imports of the
libraries happen only when an engine is chosen (each brings native code).
"""

from __future__ import annotations

import importlib
from typing import Protocol

import numpy as np

from voxnode.config.frontend import DENOISE_ENGINES

from .errors import FrontendError


class Enhancer(Protocol):
    latency_s: float  # how late the output is relative to the input

    def process(self, frame: np.ndarray) -> np.ndarray:
        """One 20 ms frame in (float32, int16 scale), one out."""


def make_enhancer(engine: str, floor_db: float) -> Enhancer:
    """`floor_db`: frontend.denoise_floor_db, the most the engine attenuates (webrtc: the nearest level;
    deepfilter: its attenuation limit)."""
    try:
        module, name = DENOISE_ENGINES[engine]
    except KeyError:
        raise FrontendError(f"unknown denoise engine {engine!r}") from None
    return getattr(importlib.import_module(module), name)(floor_db)
