"""Whisper weights with chosen layers as tf.Variables, on the graphs scripts/convert/whisper/tf_graphs.py exports.

Training runs through encoder_fn/decoder_fn themselves (the functions the converter turns into
LiteRT), so what is trained is exactly what is exported: `TrainableWeights` hands those graphs
variables instead of constants for the layers a `LayerSet` names, and `adapted()` writes the
trained values back into a CTranslate2-shaped weight set for scripts.convert.whisper.convert.convert().
"""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import tensorflow as tf

from scripts.convert.whisper import tf_graphs as whisper_tf
from scripts.convert.whisper.ct2_reader import Ct2Model

# Which weights each choice trains (regular expressions over CTranslate2 variable names).
# Measured in docs/adapt.md ("Which layers"). Embeddings (tied with the output projection,
# 20 M of tiny.en's 39 M weights) and the convolutions are never trained.
LAYER_SETS = {
    # the last two encoder blocks: where the encoder decides what is speech
    "encoder-top": (r"^encoder/layer_[23]/", r"^encoder/layer_norm/"),
    # every encoder block
    "encoder": (r"^encoder/layer_\d+/", r"^encoder/layer_norm/"),
    # the decoder's cross-attention (its K/V projections run in the encoder graph)
    "cross": (r"^decoder/layer_\d+/attention/",),
    # the last encoder blocks and the cross-attention
    "encoder-top+cross": (r"^encoder/layer_[23]/", r"^encoder/layer_norm/", r"^decoder/layer_\d+/attention/"),
    # everything but the embeddings and the convolutions
    "all": (r"^encoder/layer_", r"^decoder/layer_", r"^encoder/layer_norm/", r"^decoder/layer_norm/"),
}
DEFAULT_LAYERS = "encoder"


class TrainableWeights(whisper_tf.Weights):
    """whisper_tf.Weights whose matching variables are tf.Variables (one per fused row block)."""

    def __init__(self, ct2: Ct2Model, layers: str):
        super().__init__(ct2)
        if layers not in LAYER_SETS:
            raise ValueError(f"layers {layers!r}: one of {', '.join(LAYER_SETS)}")
        self.layers = layers
        self._patterns = [re.compile(p) for p in LAYER_SETS[layers]]
        # (ct2 name, row slice or None, transposed) -> variable
        self._vars: dict[tuple[str, tuple[int, int] | None, bool], tf.Variable] = {}

    def trains(self, name: str) -> bool:
        return any(p.search(name) for p in self._patterns)

    def _variable(self, name: str, value: np.ndarray, rows: slice | None, transposed: bool) -> tf.Tensor:
        key = (name, None if rows is None else (rows.start, rows.stop), transposed)
        if key not in self._vars:
            self._vars[key] = tf.Variable(value, trainable=True, name=name.replace("/", "_"))
        return self._vars[key]

    def const(self, name: str) -> tf.Tensor:
        if not self.trains(name):
            return super().const(name)
        return self._variable(name, np.asarray(self.ct2.get(name), np.float32), None, False)

    def linear(self, prefix: str, rows: slice | None = None):
        if not self.trains(prefix + "/weight"):
            return super().linear(prefix, rows)
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
        return list(self._vars.values())

    def parameter_count(self) -> int:
        return int(sum(np.prod(v.shape) for v in self._vars.values()))

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
        return replace(self.ct2, variables=out)
