"""Adapted weights -> int8 LiteRT model folder, through the shipped model's own conversion and checks."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from scripts.convert.whisper import convert as convert_model
from scripts.convert.whisper.ct2_reader import Ct2Model


def export(name: str, ct2_dir: Path, ct2: Ct2Model, out: Path) -> dict:
    """Convert, then load with the runtime's loader: every op must run on XNNPACK, and the model must
    transcribe a clip. Returns the engine's info."""
    convert_model.convert(name, ct2_dir, out, ["int8"], ct2=ct2)
    from voxnode.asr.whisper.engine import WhisperEngine

    with WhisperEngine.load(out) as engine:
        info = engine.info
    if not info.fully_accelerated:
        raise SystemExit(
            f"{out}: {info.ops_not_delegated} ops not on XNNPACK ({', '.join(info.not_delegated_ops)}); not installed"
        )
    return info.as_dict()


def transcribes(out: Path, audio: np.ndarray) -> str:
    """The exported model's text for `audio` (float32 [-1, 1])."""
    from voxnode.asr.whisper.engine import WhisperEngine

    with WhisperEngine.load(out) as engine:
        return engine.transcribe(audio).text


def finish(out: Path, name: str) -> None:
    """Re-list every file (MODEL.md, adaptation.json) in manifest.json and SHA256SUMS."""
    variants = json.loads((out / "manifest.json").read_text())["variants"]
    convert_model.write_manifest(out, name, variants)
