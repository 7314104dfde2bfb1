"""The terms that keep the adapted model near what tiny.en knows (issue 26; measured in docs/adapt.md).

- L2-SP ("starting point" weight decay): lambda * sum((w - w0)^2) over the trained weights, w0 the
  unadapted values; its gradient 2 * lambda * (w - w0) pulls every weight back towards tiny.en's.
  With a low-rank adapter w - w0 is A @ B, what merging adds to the weight.
- Distillation to the unadapted model (learning without forgetting): KL(teacher || student) per
  teacher-forced decoder position, the teacher being tiny.en on the CLEAN utterance and the student
  the model being trained on the noisy mix of the same utterance: "hear through the noise what you
  heard in quiet", which needs no transcripts and does not teach one talker's words.
  The teacher's distribution is kept as its TOP_K most likely tokens per position and their
  log-probabilities (K floats a position, not the vocabulary's 51864); the KL is over those K tokens
  plus one bin for the rest of the vocabulary: a true KL (>= 0, exactly 0 when the student's
  probabilities of the K tokens equal the teacher's).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import tensorflow as tf

# tiny.en on clean speech is peaked: the top 32 tokens hold nearly all of each position's probability
TOP_K = 32


@dataclass(frozen=True)
class Teacher:
    idx: np.ndarray  # [rows, TOP_K] int32: the teacher's most likely tokens per position
    logp: np.ndarray  # [rows, TOP_K] float32: their log-probabilities (over the whole vocabulary)


def top_k(logits: tf.Tensor, k: int = TOP_K) -> tuple[tf.Tensor, tf.Tensor]:
    """(indices, log-probabilities) of the k most likely tokens of each row of `logits` [rows, vocab]."""
    logp, idx = tf.math.top_k(tf.nn.log_softmax(logits), k=k)
    return idx, logp


def distill_kl(student_logits: tf.Tensor, teacher_idx: tf.Tensor, teacher_logp: tf.Tensor) -> tf.Tensor:
    """Mean over positions of KL(teacher || student) over the teacher's top-k tokens and "the rest":
    sum_k p_k log(p_k / q_k) + p_rest log(p_rest / q_rest), q the student's softmax."""
    log_q = tf.gather(tf.nn.log_softmax(student_logits), teacher_idx, batch_dims=1)
    p = tf.exp(teacher_logp)
    p_rest = tf.maximum(1.0 - tf.reduce_sum(p, axis=-1), 0.0)
    q_rest = tf.maximum(1.0 - tf.reduce_sum(tf.exp(log_q), axis=-1), 1e-12)
    kl = tf.reduce_sum(p * (teacher_logp - log_q), axis=-1) + tf.math.xlogy(p_rest, p_rest)
    return tf.reduce_mean(kl - tf.math.xlogy(p_rest, q_rest))


def l2_sp(deltas: list[tf.Tensor], lam: float) -> tf.Tensor:
    """lam * sum((w - w0)^2) over all trained weights, from their deltas w - w0 (TrainableWeights.deltas())."""
    return lam * tf.add_n([tf.reduce_sum(tf.square(d)) for d in deltas])
