"""Runs the encoder graph: log-mel window -> cross-attention keys/values per decoder layer."""

from __future__ import annotations

import numpy as np

from voxnode.errors import ModelError


class EncoderRunner:
    def __init__(self, interpreter, positions: np.ndarray, n_layers: int) -> None:
        self.it = interpreter
        self.positions = positions.astype(np.float32)
        sig = _signature(interpreter, "encoder")
        # Another graph in its place (the manifest's encoder and decoder swapped) gave a KeyError.
        lacking = [n for n in ("mel", "positions") if n not in sig.get("inputs", {})]
        if lacking:
            raise ModelError(f"encoder model lacks inputs {lacking}: not a Whisper encoder converted for voxnode")
        self.mel_in = sig["inputs"]["mel"]
        self.pos_in = sig["inputs"]["positions"]
        names = [f"cross_{kind}_{i}" for i in range(n_layers) for kind in ("k", "v")]
        missing = [n for n in names if n not in sig.get("outputs", {})]
        if missing:
            raise ModelError(f"encoder model lacks outputs {missing}")
        self.outputs = {n: sig["outputs"][n] for n in names}
        self._frames = None

    @property
    def max_frames(self) -> int:
        return 2 * len(self.positions)

    def run(self, mel: np.ndarray) -> dict[str, np.ndarray]:
        """mel [T, n_mels] with T even and T <= 2 * n_audio_ctx -> {cross_k_i, cross_v_i: [heads, T/2, 64]}.

        The arrays are views of the interpreter's output buffers, not copies (8 x 0.6 MB per
        second of window): valid until the next run, which refuses to start while any of
        them is still referenced."""
        frames = mel.shape[0]
        if frames % 2 or frames > self.max_frames:
            raise ValueError(f"encoder needs an even frame count <= {self.max_frames}, got {frames}")
        if frames != self._frames:
            self.it.resize_tensor_input(self.mel_in, [1, 1, frames, mel.shape[1]])
            self.it.resize_tensor_input(self.pos_in, [frames // 2, self.positions.shape[1]])
            self.it.allocate_tensors()
            self._frames = frames
        self.it.set_tensor(self.mel_in, mel[None, None])
        self.it.set_tensor(self.pos_in, self.positions[: frames // 2])
        self.it.invoke()
        return {n: self.it.tensor(i)() for n, i in self.outputs.items()}


def _signature(interpreter, what: str) -> dict:
    sigs = interpreter._get_full_signature_list()
    if "serving_default" not in sigs:
        raise ModelError(f"{what} model has no serving_default signature")
    return sigs["serving_default"]
