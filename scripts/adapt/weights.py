"""Whisper weights with chosen layers as tf.Variables, on the graphs scripts/convert/whisper/tf_graphs.py exports.

Training runs through encoder_fn/decoder_fn themselves (the functions the converter turns into
LiteRT), so what is trained is exactly what is exported: `TrainableWeights` hands those graphs
variables instead of constants for the layers a `LayerSet` names, and `adapted()` writes the
trained values back into a CTranslate2-shaped weight set for scripts.convert.whisper.convert.convert().

With a low-rank adapter (`choices.lora_rank`, `--adapter lora:R`) the chosen layers' weights stay constant and
each of their linear projections (per fused row block: q, k, v apart) gets W^T + A @ B, A [in, R]
drawn at random, B [R, out] zeros: the graph starts as tiny.en exactly, only A and B are trained
(biases and layer norms stay), and `adapted()` merges A @ B into the weights, so the exported model
has tiny.en's shapes and ops (the runtime is unchanged).
"""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import tensorflow as tf

from scripts.adapt.choices import LAYER_SETS
from scripts.convert.whisper import tf_graphs as whisper_tf
from scripts.convert.whisper.ct2_reader import Ct2Model


class TrainableWeights(whisper_tf.Weights):
    """whisper_tf.Weights whose matching variables are tf.Variables (one per fused row block)."""

    def __init__(self, ct2: Ct2Model, layers: str, lora: int | None = None, seed: int = 0):
        super().__init__(ct2)
        if layers not in LAYER_SETS:
            raise ValueError(f"layers {layers!r}: one of {', '.join(LAYER_SETS)}")
        self.layers = layers
        self.lora = lora
        self._rng = np.random.default_rng([seed, 7])  # LoRA's A
        self._patterns = [re.compile(p) for p in LAYER_SETS[layers]]
        # (ct2 name, row slice or None, transposed) -> variable, and its starting value (tiny.en's)
        self._vars: dict[tuple[str, tuple[int, int] | None, bool], tf.Variable] = {}
        self._w0: dict[tuple[str, tuple[int, int] | None, bool], tf.Tensor] = {}
        # LoRA: (ct2 weight name, row slice or None) -> (A [in, R], B [R, out])
        self._lora: dict[tuple[str, tuple[int, int] | None], tuple[tf.Variable, tf.Variable]] = {}

    def trains(self, name: str) -> bool:
        return any(p.search(name) for p in self._patterns)

    def _variable(self, name: str, value: np.ndarray, rows: slice | None, transposed: bool) -> tf.Tensor:
        key = (name, None if rows is None else (rows.start, rows.stop), transposed)
        if key not in self._vars:
            self._vars[key] = tf.Variable(value, trainable=True, name=name.replace("/", "_"))
            self._w0[key] = tf.constant(value)
        return self._vars[key]

    def _adapter(self, name: str, rows: slice | None, n_in: int, n_out: int) -> tf.Tensor:
        """A @ B of the LoRA on `name` (its row block `rows`), made on first use."""
        key = (name, None if rows is None else (rows.start, rows.stop))
        if key not in self._lora:
            assert self.lora is not None
            bound = 1 / np.sqrt(n_in)  # PEFT's kaiming-uniform A; B = 0, so A @ B = 0 at the start
            a = self._rng.uniform(-bound, bound, (n_in, self.lora)).astype(np.float32)
            stem = name.replace("/", "_") + ("" if rows is None else f"_{rows.start}")
            self._lora[key] = (
                tf.Variable(a, name=stem + "_lora_a"),
                tf.Variable(np.zeros((self.lora, n_out), np.float32), name=stem + "_lora_b"),
            )
        a_var, b_var = self._lora[key]
        return tf.matmul(a_var, b_var)

    def const(self, name: str) -> tf.Tensor:
        if not self.trains(name) or self.lora:
            return super().const(name)
        return self._variable(name, np.asarray(self.ct2.get(name), np.float32), None, False)

    def linear(self, prefix: str, rows: slice | None = None):
        if not self.trains(prefix + "/weight"):
            return super().linear(prefix, rows)
        if self.lora:
            w_t, b = super().linear(prefix, rows)
            return w_t + self._adapter(prefix + "/weight", rows, *w_t.shape), b
        w = self.ct2.get(prefix + "/weight").astype(np.float32)
        b = self.ct2.get(prefix + "/bias").astype(np.float32)
        if rows is not None:
            w, b = w[rows], b[rows]
        return (
            self._variable(prefix + "/weight", np.ascontiguousarray(w.T), rows, True),
            self._variable(prefix + "/bias", b, rows, False),
        )

    @property
    def variables(self) -> list[tf.Variable]:
        return list(self._vars.values()) + [v for pair in self._lora.values() for v in pair]

    def parameter_count(self) -> int:
        return int(sum(np.prod(v.shape) for v in self.variables))

    def deltas(self) -> list[tf.Tensor]:
        """w - w0 for every trained weight (w0 = tiny.en's): each variable's change, or each LoRA's A @ B
        (what merging adds): what L2-SP pulls towards 0 and drift sums up."""
        if self.lora:
            return [tf.matmul(a, b) for a, b in self._lora.values()]
        return [v - self._w0[k] for k, v in self._vars.items()]

    def adapted(self) -> Ct2Model:
        """A copy of the source weights with the trained values written back (float32)."""
        out = dict(self.ct2.variables)
        for (name, rows, transposed), var in self._vars.items():
            name = self.ct2.aliases.get(name, name)
            value = var.numpy().T if transposed else var.numpy()
            if rows is None:
                out[name] = value.astype(np.float32)
                continue
            full = out[name].astype(np.float32, copy=True)
            full[rows[0] : rows[1]] = value
            out[name] = full
        for (name, rows), (a, b) in self._lora.items():
            name = self.ct2.aliases.get(name, name)
            merged = out[name].astype(np.float32, copy=True)  # [out, in]: A @ B is [in, out]
            delta = (a.numpy() @ b.numpy()).T
            if rows is None:
                merged += delta
            else:
                merged[rows[0] : rows[1]] += delta
            out[name] = merged
        return replace(self.ct2, variables=out)
