"""Teacher-forced fine-tuning of Whisper on the exporter's own graphs (batch 1, gradients accumulated).

One step: log-mel of one utterance (the runtime's window: audio zero-padded to max(6 s, ceil(length
+ 1 s))), the encoder graph, the decoder graph with an empty self-attention cache, a causal mask
and every row picked, cross-entropy of each next token of <|startoftranscript|><|notimestamps|>
text<|endoftext|> (the prompt row excluded). Adam over the chosen layers only.

Two terms keep what tiny.en knows (scripts/adapt/regularise.py; docs/adapt.md "Keeping what
tiny.en knows"): distillation (`distill`: KL from the unadapted model's soft targets on the CLEAN
version of each utterance to the model's output on the noisy mix, per teacher-forced position) and
L2-SP (`keep_weights`: lambda * sum((w - w0)^2) over the trained weights, w0 = tiny.en's).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import tensorflow as tf

from scripts.adapt import regularise
from scripts.adapt.weights import TrainableWeights
from scripts.convert.whisper import tf_graphs as whisper_tf


@dataclass(frozen=True)
class Example:
    mel: np.ndarray  # [T, n_mels], T even
    tokens: tuple[int, ...]  # sot, no_timestamps, text..., eot
    # the unadapted model's top-k soft targets on the clean utterance (Trainer.teacher), or None
    teacher: regularise.Teacher | None = None


class Trainer:
    def __init__(
        self,
        weights: TrainableWeights,
        learning_rate: float,
        accumulate: int,
        distill: float = 0.0,
        keep_weights: float = 0.0,
    ):
        self.w = weights
        self.accumulate = max(1, accumulate)
        self.distill = float(distill)
        self.keep_weights = float(keep_weights)
        self.encoder = whisper_tf.encoder_fn(weights)
        self.decoder = whisper_tf.decoder_fn(weights)
        self.enc_positions = tf.constant(weights.ct2.get("encoder/position_encodings/encodings").astype(np.float32))
        self.dec_positions = tf.constant(weights.ct2.get("decoder/position_encodings/encodings").astype(np.float32))
        self.embedding = tf.constant(weights.ct2.get("decoder/embeddings/weight").astype(np.float32))
        # Variables are made eagerly, once, before any graph is traced.
        mel = np.zeros((1, 1, 4, weights.n_mels), np.float32)
        cross = self.encoder.python_function(tf.constant(mel), self.enc_positions[:2])
        self._loss_eager(cross, np.array([1, 2], np.int32))
        self.variables = weights.variables
        self._updates = 0
        self.optimizer = tf.keras.optimizers.Adam(learning_rate)
        self._sums = [tf.Variable(tf.zeros_like(v), trainable=False) for v in self.variables]
        self._pending = 0
        heads, hd = weights.heads, weights.head_dim
        self._empty = tf.zeros([heads, 0, hd], tf.float32)
        self._step = tf.function(
            self._grad_step,
            input_signature=[
                tf.TensorSpec([None, weights.n_mels], tf.float32),
                tf.TensorSpec([None], tf.int32),
            ],
        )
        self._eval = tf.function(
            self._loss_only,
            input_signature=[
                tf.TensorSpec([None, weights.n_mels], tf.float32),
                tf.TensorSpec([None], tf.int32),
            ],
        )
        self._teacher = tf.function(
            self._top_k,
            input_signature=[
                tf.TensorSpec([None, weights.n_mels], tf.float32),
                tf.TensorSpec([None], tf.int32),
            ],
        )
        self._distill_step = tf.function(
            self._grad_step_distill,
            input_signature=[
                tf.TensorSpec([None, weights.n_mels], tf.float32),
                tf.TensorSpec([None], tf.int32),
                tf.TensorSpec([None, regularise.TOP_K], tf.int32),
                tf.TensorSpec([None, regularise.TOP_K], tf.float32),
            ],
        )

    def _loss_eager(self, cross, tokens):
        """Builds the decoder's variables by running its Python body once, eagerly."""
        n = self.w.n_dec
        x = tf.gather(self.embedding, tokens[:-1]) + self.dec_positions[: len(tokens) - 1]
        rows = len(tokens) - 1
        caches = [tf.zeros([self.w.heads, 0, self.w.head_dim])] * (2 * n)
        caches += [cross[f"cross_k_{i}"] for i in range(n)] + [cross[f"cross_v_{i}"] for i in range(n)]
        self.decoder.python_function(x, tf.zeros([rows, rows]), tf.eye(rows), *caches)

    def _logits(self, mel, tokens):
        """Teacher-forced logits of the rows that predict tokens[2:] (text and <|endoftext|>)."""
        n = self.w.n_dec
        frames = tf.shape(mel)[0]
        cross = self.encoder(mel[None, None], self.enc_positions[: frames // 2])
        rows = tf.shape(tokens)[0] - 1
        x = tf.gather(self.embedding, tokens[:-1]) + self.dec_positions[:rows]
        causal = tf.linalg.band_part(tf.ones([rows, rows]), -1, 0)
        mask = (1.0 - causal) * -1e9
        caches = [self._empty] * (2 * n)
        caches += [cross[f"cross_k_{i}"] for i in range(n)] + [cross[f"cross_v_{i}"] for i in range(n)]
        logits = self.decoder(x, mask, tf.eye(rows), *caches)["logits"]
        # Row 0 sees <|startoftranscript|> and predicts <|notimestamps|>, which is forced at run time.
        return logits[1:]

    def _loss(self, mel, tokens):
        ce = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tokens[2:], logits=self._logits(mel, tokens))
        return tf.reduce_mean(ce)

    def _top_k(self, mel, tokens):
        return regularise.top_k(self._logits(mel, tokens))

    def _grad_step_distill(self, mel, tokens, t_idx, t_logp):
        with tf.GradientTape() as tape:
            logits = self._logits(mel, tokens)
            ce = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tokens[2:], logits=logits))
            loss = ce + self.distill * regularise.distill_kl(logits, t_idx, t_logp)
        grads = tape.gradient(loss, self.variables)
        for s, g in zip(self._sums, grads, strict=True):
            s.assign_add(g)
        return ce

    def _grad_step(self, mel, tokens):
        with tf.GradientTape() as tape:
            loss = self._loss(mel, tokens)
        grads = tape.gradient(loss, self.variables)
        for s, g in zip(self._sums, grads, strict=True):
            s.assign_add(g)
        return loss

    def _loss_only(self, mel, tokens):
        return self._loss(mel, tokens)

    def teacher(self, ex: Example) -> regularise.Teacher:
        """The unadapted model's soft targets for `ex` (its clean version): only before any update, when
        the trained weights are still tiny.en's (so the teacher is the frozen original, run on the same
        graph, and computed once per utterance for all epochs: the clean audio does not change)."""
        if self._updates:
            raise RuntimeError("the teacher is the unadapted model: compute its targets before training")
        idx, logp = self._teacher(ex.mel, np.asarray(ex.tokens, np.int32))
        return regularise.Teacher(idx.numpy(), logp.numpy())

    def step(self, ex: Example) -> float:
        """One utterance's gradients (accumulated; an update every `accumulate`). Returns its cross-entropy."""
        tokens = np.asarray(ex.tokens, np.int32)
        if self.distill and ex.teacher is not None:
            loss = float(self._distill_step(ex.mel, tokens, ex.teacher.idx, ex.teacher.logp))
        else:
            loss = float(self._step(ex.mel, tokens))
        self._pending += 1
        if self._pending >= self.accumulate:
            self.apply()
        return loss

    def apply(self) -> None:
        if not self._pending:
            return
        scale = 1.0 / self._pending
        grads = [s * scale for s in self._sums]
        if self.keep_weights:
            # once per update, like the mean of the utterances' gradients it is added to (before clipping)
            grads = [g + k for g, k in zip(grads, self.keep_weights_grads(), strict=True)]
        # Clipped: one loud mix must not undo what the model knows.
        grads, _ = tf.clip_by_global_norm(grads, 1.0)
        self.optimizer.apply_gradients(zip(grads, self.variables, strict=True))
        for s in self._sums:
            s.assign(tf.zeros_like(s))
        self._pending = 0
        self._updates += 1

    def keep_weights_grads(self) -> list[tf.Tensor]:
        """The gradient of the L2-SP term at the current weights."""
        with tf.GradientTape() as tape:
            penalty = regularise.l2_sp(self.w.deltas(), self.keep_weights)
        return tape.gradient(penalty, self.variables)

    def drift(self) -> float:
        """sum((w - w0)^2) over the trained weights (with a LoRA: over what merging adds): how far
        training moved them from tiny.en's (0 before)."""
        return float(sum(np.sum(np.square(d.numpy())) for d in self.w.deltas()))

    def loss(self, examples: Iterable[Example]) -> float:
        """Mean loss over `examples` (no update)."""
        values = [float(self._eval(ex.mel, np.asarray(ex.tokens, np.int32))) for ex in examples]
        return float(np.mean(values)) if values else float("nan")


def run_epochs(
    trainer: Trainer,
    epochs: int,
    examples_of_epoch: Callable[[int], list[Example]],
    progress: Callable[[str], None],
) -> list[dict]:
    """Train; report a progress line with the time left after every few steps. Returns per-epoch stats."""
    stats = []
    t_start = time.monotonic()
    total = None
    done = 0
    for epoch in range(epochs):
        batch = examples_of_epoch(epoch)
        total = total or len(batch) * epochs
        losses = []
        t0 = time.monotonic()
        for i, ex in enumerate(batch):
            losses.append(trainer.step(ex))
            done += 1
            if done % 10 == 0 or i == len(batch) - 1:
                rate = (time.monotonic() - t_start) / done
                left = rate * (total - done)
                bar = "#" * int(30 * done / total)
                progress(
                    f"\r[{bar:<30}] epoch {epoch + 1}/{epochs} step {i + 1}/{len(batch)} "
                    f"loss {np.mean(losses[-50:]):.3f}  {rate:.2f} s/step, {left / 60:.0f} min left "
                )
        trainer.apply()
        stats.append({"epoch": epoch + 1, "loss": round(float(np.mean(losses)), 4), "s": round(time.monotonic() - t0)})
        progress("\n")
    return stats
