"""What the recogniser hears: the runtime's front-end, window and log-mel, and the target tokens."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from scripts.adapt.train import Example
from voxnode.asr.mel import SAMPLE_RATE, LogMel
from voxnode.asr.whisper.tokenizer import Tokenizer
from voxnode.asr.whisper.window import first_window
from voxnode.config import Config
from voxnode.frontend.recognition import recognition_audio
from voxnode.stream.params import frontend_params


class Features:
    def __init__(self, model_dir: Path, config: Config | None = None):
        cfg = json.loads((model_dir / "model_config.json").read_text())
        tok = cfg["tokens"]
        self.sot, self.no_ts, self.eot = int(tok["sot"]), int(tok["no_timestamps"]), int(tok["eot"])
        self.tokenizer = Tokenizer.from_file(model_dir / "vocabulary.txt", self.eot, model_dir / "merges.npy")
        self.mel = LogMel(int(cfg["n_mels"]))
        self.frontend = frontend_params(config or Config())
        self.max_text = int(cfg["n_text_ctx"]) - 3

    def heard(self, audio: np.ndarray) -> np.ndarray:
        """int16-scale audio -> float32 [-1, 1] after the front-end `voxnode run`/`transcribe` use."""
        return recognition_audio(self.frontend, (audio / 32768.0).astype(np.float32))

    def example(self, audio: np.ndarray, text: str) -> Example:
        x = self.heard(audio)
        duration = len(x) / SAMPLE_RATE
        window = first_window(duration)
        padded = np.zeros(int(window * SAMPLE_RATE), np.float32)
        padded[: min(len(x), len(padded))] = x[: len(padded)]
        mel = self.mel(padded)
        text_ids = self.tokenizer.encode(" " + text.strip())[: self.max_text]
        return Example(mel[: 2 * (len(mel) // 2)], (self.sot, self.no_ts, *text_ids, self.eot))
