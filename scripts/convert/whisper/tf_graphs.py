"""Whisper encoder and KV-cached decoder as TensorFlow graphs (build-time): tiny.en and base.

Both graphs are written so that every op lands in XNNPACK after conversion:
no GATHER (token and position embeddings are added by the caller), no
shape-dependent slicing (the encoder's positional rows are an input), no
fused-weight splits (fused Q/K/V weights are split here, in numpy).

Shapes below with d = d_model (tiny.en 384, 6 heads; base 512, 8 heads; head size 64 in both),
all read from the weights.

Encoder   inputs : mel [1, 1, T, 80] (time-major), positions [S, d], S = T / 2
          outputs: cross_k_{i}, cross_v_{i} [heads, S, 64] for each decoder layer,
                   encoder_output [S, d] (used by verification only)
Decoder   inputs : x [N, d] (N rows: token embedding + position row each),
                   mask [N, M + N] (additive: 0 where a row may attend, -1e9 elsewhere;
                   the first M columns are the cache rows, the last N the rows of x),
                   pick [K, N] (one-hot: which rows' logits to compute),
                   self_k_{i}, self_v_{i} [heads, M, 64], cross_k_{i}, cross_v_{i} [heads, S, 64]
          outputs: logits [K, vocab], new_k_{i}, new_v_{i} [heads, N, 64]
          One graph serves every use: the caller decides what the rows are and who may
          see whom through the mask. Prefill: N prompt tokens of one sequence with a
          causal mask. Beam search / sampling: N = beams, one new token each, the cache
          holding every beam's rows and the mask letting each row see only its own beam's.
          Attention to the other beams' rows is masked, not skipped: with M <= 5 x 224
          rows that costs far less than the projections, and it keeps every shape a
          plain [rows, features] matrix (no reshape that needs two dynamic sizes).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

LN_EPS = 1e-5


def _f32(a: np.ndarray) -> tf.Tensor:
    return tf.constant(np.asarray(a, dtype=np.float32))


class Weights:
    """Float32 TF constants for one CTranslate2 Whisper model."""

    def __init__(self, ct2):
        self.ct2 = ct2
        self.n_enc = _count_layers(ct2, "encoder")
        self.n_dec = _count_layers(ct2, "decoder")
        self.d_model = int(ct2.get("encoder/conv1/weight").shape[0])
        self.n_mels = int(ct2.get("encoder/conv1/weight").shape[1])
        self.heads = int(ct2.get("decoder/num_heads"))
        enc_heads = int(ct2.get("encoder/num_heads")) if "encoder/num_heads" in ct2.variables else self.heads
        if enc_heads != self.heads or self.d_model % self.heads:
            raise ValueError("encoder and decoder must have the same number of heads, dividing d_model")
        self.head_dim = self.d_model // self.heads

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


def heads_first(x, w: Weights):
    """[S, d] -> [heads, S, 64]"""
    return tf.transpose(tf.reshape(x, [-1, w.heads, w.head_dim]), [1, 0, 2])


def heads_merged(x, w: Weights):
    """[heads, S, 64] -> [S, d]"""
    return tf.reshape(tf.transpose(x, [1, 0, 2]), [-1, w.d_model])


def attention(q, k, v, w: Weights, mask=None):
    scores = tf.matmul(q, k, transpose_b=True) * (1.0 / np.sqrt(w.head_dim))
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
    d = w.d_model

    def encode(mel, positions):
        x = _conv(mel, w, "encoder/conv1", 1)
        x = _conv(x, w, "encoder/conv2", 2)
        x = tf.reshape(x, [-1, d]) + positions
        for i in range(w.n_enc):
            p = f"encoder/layer_{i}/self_attention"
            h = layer_norm(x, w, p + "/layer_norm")
            q = heads_first(dense(h, w.linear(p + "/linear_0", slice(0, d))), w)
            k = heads_first(dense(h, w.linear(p + "/linear_0", slice(d, 2 * d))), w)
            v = heads_first(dense(h, w.linear(p + "/linear_0", slice(2 * d, 3 * d))), w)
            x = x + dense(heads_merged(attention(q, k, v, w), w), w.linear(p + "/linear_1"))
            x = ffn(x, w, f"encoder/layer_{i}/ffn")
        x = layer_norm(x, w, "encoder/layer_norm")
        out = {"encoder_output": x}
        for i in range(w.n_dec):
            p = f"decoder/layer_{i}/attention/linear_1"
            out[f"cross_k_{i}"] = heads_first(dense(x, w.linear(p, slice(0, d))), w)
            out[f"cross_v_{i}"] = heads_first(dense(x, w.linear(p, slice(d, 2 * d))), w)
        return out

    spec = [
        tf.TensorSpec([1, 1, None, w.n_mels], tf.float32, name="mel"),
        tf.TensorSpec([None, d], tf.float32, name="positions"),
    ]
    return tf.function(encode, input_signature=spec)


def decoder_fn(w: Weights):
    n = w.n_dec
    d = w.d_model
    embedding_t = _f32(w.ct2.get("decoder/embeddings/weight"))  # [vocab, d], tied output projection

    def decode(x, mask, pick, *caches):
        self_k, self_v = caches[0:n], caches[n : 2 * n]
        cross_k, cross_v = caches[2 * n : 3 * n], caches[3 * n : 4 * n]
        out = {}
        for i in range(n):
            p = f"decoder/layer_{i}/self_attention"
            h = layer_norm(x, w, p + "/layer_norm")
            q = heads_first(dense(h, w.linear(p + "/linear_0", slice(0, d))), w)
            k = heads_first(dense(h, w.linear(p + "/linear_0", slice(d, 2 * d))), w)
            v = heads_first(dense(h, w.linear(p + "/linear_0", slice(2 * d, 3 * d))), w)
            out[f"new_k_{i}"], out[f"new_v_{i}"] = k, v
            keys = tf.concat([self_k[i], k], axis=1)
            values = tf.concat([self_v[i], v], axis=1)
            x = x + dense(heads_merged(attention(q, keys, values, w, mask), w), w.linear(p + "/linear_1"))

            p = f"decoder/layer_{i}/attention"
            h = layer_norm(x, w, p + "/layer_norm")
            q = heads_first(dense(h, w.linear(p + "/linear_0")), w)
            x = x + dense(heads_merged(attention(q, cross_k[i], cross_v[i], w), w), w.linear(p + "/linear_2"))
            x = ffn(x, w, f"decoder/layer_{i}/ffn")
        x = layer_norm(tf.matmul(pick, x), w, "decoder/layer_norm")
        out["logits"] = tf.matmul(x, embedding_t, transpose_b=True)
        return out

    spec = [
        tf.TensorSpec([None, d], tf.float32, name="x"),
        tf.TensorSpec([None, None], tf.float32, name="mask"),
        tf.TensorSpec([None, None], tf.float32, name="pick"),
    ]
    for kind in ("self_k", "self_v", "cross_k", "cross_v"):
        spec += [tf.TensorSpec([w.heads, None, w.head_dim], tf.float32, name=f"{kind}_{i}") for i in range(n)]
    return tf.function(decode, input_signature=spec)
