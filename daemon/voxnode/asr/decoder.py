"""Greedy decoding with the KV-cached decoder graph.

The graph takes one token per call: its embedding (plus position row) as
`x`, a self-attention cache per layer, and the encoder's cross-attention K/V.
It returns logits and this step's K/V, which we write into the cache. The
cache is sized once per utterance (prompt + token cap) and masked, so the
interpreter is not reallocated at every step.

The token embedding exists once, as the weight of the tied output
projection inside the graph; input embeddings are read from that tensor.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from voxnode.asr.guards import repeated_tail
from voxnode.errors import ModelError

EMPTY_SLOT = np.float32(-1e9)


@dataclass(frozen=True)
class Decoded:
    tokens: list[int]
    logprobs: list[float]  # one per token in `tokens`, plus the end-of-text token if reached
    no_speech_prob: float
    stop_reason: str  # "eot", "token_cap" or "repetition"


def log_softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max()
    return shifted - np.log(np.exp(shifted).sum())


class TokenEmbedding:
    """Rows of the output projection weight, dequantised on demand."""

    def __init__(self, interpreter, logits_index: int) -> None:
        fc = [
            op
            for op in interpreter._get_ops_details()
            if op["op_name"] == "FULLY_CONNECTED" and logits_index in op["outputs"]
        ]
        if not fc:
            raise ModelError("decoder model: no output projection feeding the logits")
        self.index = int(fc[0]["inputs"][1])
        self.it = interpreter
        details = interpreter._get_tensor_details(self.index, 0)
        quant = details["quantization_parameters"]
        self.scales = quant["scales"].astype(np.float32) if len(quant["scales"]) else None
        if self.scales is not None and len(quant["zero_points"]) and np.any(quant["zero_points"]):
            raise ModelError("decoder model: asymmetric embedding quantisation is not supported")

    def row(self, token: int) -> np.ndarray:
        # A fresh view each time: constant data in the mapped model, no copy of the table.
        weight = self.it.tensor(self.index)()
        row = weight[token].astype(np.float32)
        if self.scales is not None:
            row *= self.scales[token] if len(self.scales) > 1 else self.scales[0]
        return row


class DecoderRunner:
    def __init__(self, interpreter, positions: np.ndarray, config: dict) -> None:
        self.it = interpreter
        self.positions = positions.astype(np.float32)
        self.n_layers = int(config["n_decoder_layers"])
        self.n_heads = int(config["n_heads"])
        self.head_dim = int(config["d_model"]) // self.n_heads
        tok = config["tokens"]
        self.sot, self.eot = tok["sot"], tok["eot"]
        self.no_speech, self.no_timestamps = tok["no_speech"], tok["no_timestamps"]
        sig = interpreter._get_full_signature_list().get("serving_default")
        if sig is None:
            raise ModelError("decoder model has no serving_default signature")
        self.inputs, self.outputs = sig["inputs"], sig["outputs"]
        self.embedding = TokenEmbedding(interpreter, self.outputs["logits"])
        vocab = int(config["vocab_size"])
        # Text tokens only: every special and timestamp token is masked, and
        # Whisper's list of non-speech symbols too.
        self.suppress = np.zeros(vocab, dtype=bool)
        self.suppress[self.sot :] = True
        self.suppress[np.asarray(config["suppress_ids"], dtype=np.int64)] = True
        self.suppress_begin = np.asarray(config["suppress_ids_begin"], dtype=np.int64)
        self._shape: tuple[int, int] | None = None

    def _prepare(self, cross: dict[str, np.ndarray], cache_len: int) -> None:
        shape = (cross["cross_k_0"].shape[1], cache_len)
        if shape != self._shape:
            for name, arr in cross.items():
                self.it.resize_tensor_input(self.inputs[name], list(arr.shape))
            for i in range(self.n_layers):
                for kind in ("self_k", "self_v"):
                    self.it.resize_tensor_input(self.inputs[f"{kind}_{i}"], [self.n_heads, cache_len, self.head_dim])
            self.it.resize_tensor_input(self.inputs["mask"], [1, cache_len])
            self.it.allocate_tensors()
            self._shape = shape
        for name, arr in cross.items():
            self.it.set_tensor(self.inputs[name], arr)

    def _step(self, token: int, pos: int, cache: dict[str, np.ndarray], mask: np.ndarray) -> np.ndarray:
        x = (self.embedding.row(token) + self.positions[pos])[None]
        self.it.set_tensor(self.inputs["x"], x)
        self.it.set_tensor(self.inputs["mask"], mask)
        for name, arr in cache.items():
            self.it.set_tensor(self.inputs[name], arr)
        self.it.invoke()
        for i in range(self.n_layers):
            cache[f"self_k_{i}"][:, pos] = self.it.get_tensor(self.outputs[f"new_k_{i}"])[:, 0]
            cache[f"self_v_{i}"][:, pos] = self.it.get_tensor(self.outputs[f"new_v_{i}"])[:, 0]
        mask[0, pos] = 0.0
        return self.it.get_tensor(self.outputs["logits"])[0]

    def greedy(self, cross: dict[str, np.ndarray], max_new_tokens: int) -> Decoded:
        prompt = [self.sot, self.no_timestamps]
        cache_len = min(len(self.positions), len(prompt) + max_new_tokens)
        max_new_tokens = cache_len - len(prompt)
        self._prepare(cross, cache_len)
        cache = {
            f"{kind}_{i}": np.zeros((self.n_heads, cache_len, self.head_dim), np.float32)
            for i in range(self.n_layers)
            for kind in ("self_k", "self_v")
        }
        mask = np.full((1, cache_len), EMPTY_SLOT, np.float32)

        # Whisper reads "no speech" off the prediction right after <|startoftranscript|>.
        first = self._step(self.sot, 0, cache, mask)
        no_speech_prob = float(np.exp(log_softmax(first)[self.no_speech]))
        logits = self._step(self.no_timestamps, 1, cache, mask)

        tokens: list[int] = []
        logprobs: list[float] = []
        stop = "token_cap"
        pos = len(prompt)
        while True:
            logits = np.where(self.suppress, -np.inf, logits)
            if not tokens:
                logits[self.suppress_begin] = -np.inf  # no leading blank or empty transcript
            lp = log_softmax(logits)
            token = int(np.argmax(lp))
            logprobs.append(float(lp[token]))
            if token == self.eot:
                stop = "eot"
                break
            tokens.append(token)
            cut = repeated_tail(tokens)
            if cut:
                del tokens[-cut:]
                del logprobs[-cut:]
                stop = "repetition"
                break
            if len(tokens) >= max_new_tokens:
                break
            logits = self._step(token, pos, cache, mask)
            pos += 1
        return Decoded(tokens, logprobs, no_speech_prob, stop)
