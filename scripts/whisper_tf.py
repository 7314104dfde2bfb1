"""Whisper tiny.en encoder and KV-cached decoder as TensorFlow graphs (build-time).

Both graphs are written so that every op lands in XNNPACK after conversion:
no GATHER (token and position embeddings are added by the caller), no
shape-dependent slicing (the encoder's positional rows are an input), no
fused-weight splits (fused Q/K/V weights are split here, in numpy).

Encoder   inputs : mel [1, 1, T, 80] (time-major), positions [S, 384], S = T / 2
          outputs: cross_k_{i}, cross_v_{i} [heads, S, 64] for each decoder layer,
                   encoder_output [S, 384] (used by verification only)
Decoder   inputs : x [1, 384] (token embedding + position row), mask [1, L]
                   (0 for filled cache slots, -1e9 for empty ones),
                   self_k_{i}, self_v_{i} [heads, L, 64], cross_k_{i}, cross_v_{i}
          outputs: logits [1, vocab], new_k_{i}, new_v_{i} [heads, 1, 64]
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

D_MODEL = 384
HEADS = 6
HEAD_DIM = D_MODEL // HEADS
LN_EPS = 1e-5


def _f32(a: np.ndarray) -> tf.Tensor:
    return tf.constant(np.asarray(a, dtype=np.float32))


class Weights:
    """Float32 TF constants for one CTranslate2 Whisper model."""

    def __init__(self, ct2):
        self.ct2 = ct2
        self.n_enc = _count_layers(ct2, "encoder")
        self.n_dec = _count_layers(ct2, "decoder")

    def const(self, name: str) -> tf.Tensor:
        return _f32(self.ct2.get(name))

    def linear(self, prefix: str, rows: slice | None = None):
        """(W^T [in, out], b [out]) for a CTranslate2 [out, in] linear, optionally one row block."""
        w = self.ct2.get(prefix + "/weight").astype(np.float32)
        b = self.ct2.get(prefix + "/bias").astype(np.float32)
        if rows is not None:
            w, b = w[rows], b[rows]
        return _f32(np.ascontiguousarray(w.T)), _f32(b)


def _count_layers(ct2, side: str) -> int:
    n = 0
    while f"{side}/layer_{n}/ffn/linear_0/weight" in ct2.variables:
        n += 1
    return n


def layer_norm(x, w: Weights, prefix: str):
    gamma, beta = w.const(prefix + "/gamma"), w.const(prefix + "/beta")
    mean = tf.reduce_mean(x, axis=-1, keepdims=True)
    centred = x - mean
    var = tf.reduce_mean(tf.square(centred), axis=-1, keepdims=True)
    return centred * tf.math.rsqrt(var + LN_EPS) * gamma + beta


def dense(x, wb):
    return tf.matmul(x, wb[0]) + wb[1]


def heads_first(x):
    """[S, 384] -> [heads, S, 64]"""
    return tf.transpose(tf.reshape(x, [-1, HEADS, HEAD_DIM]), [1, 0, 2])


def heads_merged(x):
    """[heads, S, 64] -> [S, 384]"""
    return tf.reshape(tf.transpose(x, [1, 0, 2]), [-1, D_MODEL])


def attention(q, k, v, mask=None):
    scores = tf.matmul(q, k, transpose_b=True) * (1.0 / np.sqrt(HEAD_DIM))
    if mask is not None:
        scores = scores + mask
    return tf.matmul(tf.nn.softmax(scores, axis=-1), v)


def ffn(x, w: Weights, prefix: str):
    h = layer_norm(x, w, prefix + "/layer_norm")
    h = tf.nn.gelu(dense(h, w.linear(prefix + "/linear_0")), approximate=False)
    return x + dense(h, w.linear(prefix + "/linear_1"))


def _conv(x, w: Weights, prefix: str, stride: int):
    # PyTorch Conv1d(padding=1) is symmetric padding, which TF 'SAME' with
    # stride 2 is not: pad explicitly and use VALID.
    kernel = w.ct2.get(prefix + "/weight").astype(np.float32)  # [out, in, k]
    kernel = np.transpose(kernel, (2, 1, 0))[None]  # [1, k, in, out]
    x = tf.pad(x, [[0, 0], [0, 0], [1, 1], [0, 0]])
    x = tf.nn.conv2d(x, _f32(kernel), strides=[1, 1, stride, 1], padding="VALID")
    return tf.nn.gelu(x + w.const(prefix + "/bias"), approximate=False)


def encoder_fn(w: Weights):
    def encode(mel, positions):
        x = _conv(mel, w, "encoder/conv1", 1)
        x = _conv(x, w, "encoder/conv2", 2)
        x = tf.reshape(x, [-1, D_MODEL]) + positions
        for i in range(w.n_enc):
            p = f"encoder/layer_{i}/self_attention"
            h = layer_norm(x, w, p + "/layer_norm")
            q = heads_first(dense(h, w.linear(p + "/linear_0", slice(0, D_MODEL))))
            k = heads_first(dense(h, w.linear(p + "/linear_0", slice(D_MODEL, 2 * D_MODEL))))
            v = heads_first(dense(h, w.linear(p + "/linear_0", slice(2 * D_MODEL, 3 * D_MODEL))))
            x = x + dense(heads_merged(attention(q, k, v)), w.linear(p + "/linear_1"))
            x = ffn(x, w, f"encoder/layer_{i}/ffn")
        x = layer_norm(x, w, "encoder/layer_norm")
        out = {"encoder_output": x}
        for i in range(w.n_dec):
            p = f"decoder/layer_{i}/attention/linear_1"
            out[f"cross_k_{i}"] = heads_first(dense(x, w.linear(p, slice(0, D_MODEL))))
            out[f"cross_v_{i}"] = heads_first(dense(x, w.linear(p, slice(D_MODEL, 2 * D_MODEL))))
        return out

    spec = [
        tf.TensorSpec([1, 1, None, 80], tf.float32, name="mel"),
        tf.TensorSpec([None, D_MODEL], tf.float32, name="positions"),
    ]
    return tf.function(encode, input_signature=spec)


def decoder_fn(w: Weights):
    n = w.n_dec
    embedding_t = _f32(w.ct2.get("decoder/embeddings/weight"))  # [vocab, 384], tied output projection

    def decode(x, mask, *caches):
        self_k, self_v = caches[0:n], caches[n : 2 * n]
        cross_k, cross_v = caches[2 * n : 3 * n], caches[3 * n : 4 * n]
        full_mask = tf.concat([mask, tf.zeros([1, 1], tf.float32)], axis=1)
        out = {}
        for i in range(n):
            p = f"decoder/layer_{i}/self_attention"
            h = layer_norm(x, w, p + "/layer_norm")
            # One token: [1, 384] -> [heads, 1, 64] is a plain reshape.
            q = tf.reshape(dense(h, w.linear(p + "/linear_0", slice(0, D_MODEL))), [HEADS, 1, HEAD_DIM])
            k = tf.reshape(dense(h, w.linear(p + "/linear_0", slice(D_MODEL, 2 * D_MODEL))), [HEADS, 1, HEAD_DIM])
            v = tf.reshape(dense(h, w.linear(p + "/linear_0", slice(2 * D_MODEL, 3 * D_MODEL))), [HEADS, 1, HEAD_DIM])
            out[f"new_k_{i}"], out[f"new_v_{i}"] = k, v
            keys = tf.concat([self_k[i], k], axis=1)
            values = tf.concat([self_v[i], v], axis=1)
            a = tf.reshape(attention(q, keys, values, full_mask), [1, D_MODEL])
            x = x + dense(a, w.linear(p + "/linear_1"))

            p = f"decoder/layer_{i}/attention"
            h = layer_norm(x, w, p + "/layer_norm")
            q = tf.reshape(dense(h, w.linear(p + "/linear_0")), [HEADS, 1, HEAD_DIM])
            a = tf.reshape(attention(q, cross_k[i], cross_v[i]), [1, D_MODEL])
            x = x + dense(a, w.linear(p + "/linear_2"))
            x = ffn(x, w, f"decoder/layer_{i}/ffn")
        x = layer_norm(x, w, "decoder/layer_norm")
        out["logits"] = tf.matmul(x, embedding_t, transpose_b=True)
        return out

    spec = [tf.TensorSpec([1, D_MODEL], tf.float32, name="x"), tf.TensorSpec([1, None], tf.float32, name="mask")]
    for kind in ("self_k", "self_v", "cross_k", "cross_v"):
        spec += [tf.TensorSpec([HEADS, None, HEAD_DIM], tf.float32, name=f"{kind}_{i}") for i in range(n)]
    return tf.function(decode, input_signature=spec)
