"""Convert Pipecat's Smart Turn v3.2 end-of-turn model to TFLite (a candidate for issue 9's endpoints).

Build-time only, in the conversion venv (TensorFlow, onnx and onnxruntime never enter the runtime):

    .venv-convert/bin/python -m scripts.convert.smart_turn [--out build/smart-turn-v3.2]

Source: `smart-turn-v3.2-cpu.onnx` (BSD-2-Clause), shipped inside the `pipecat-ai` wheel on PyPI,
fetched with `pip download --no-deps` (only that file is read). The model is a Whisper-tiny encoder
(conv stem, 4 pre-LayerNorm layers, 400 positions = 8 s) whose output is pooled by a learned
attention (tanh MLP -> softmax over time) and classified by a small MLP (384 -> 256, LayerNorm,
GELU, -> 64, GELU, -> 1, sigmoid): P(the speaker has finished). The ONNX file is a QDQ graph (int8
per-channel weights, uint8 activations); the weights are dequantised and the network rebuilt in
TensorFlow with the same building blocks as our Whisper encoder (scripts/convert/whisper/tf_graphs.py), converted
with dynamic-range quantisation (int8 weights, float activations, as the Whisper encoder), and
checked against onnxruntime on the real speech of the live-noise corpus, whole utterances and
fragments cut mid-sentence, clean and in pink noise.

Input of the TFLite graph: `mel` [1, 1, 800, 80], the Whisper log-mel (voxnode.asr.mel.LogMel) of
the last 8 s of audio, zero-padded at the front, after the waveform is normalised to zero mean and
unit variance (the model's training front-end). Output: `prob` [1, 1].

`--window` builds the same network for any window up to 8 s instead (mel [1, 1, T, 80] and the
positional rows [T / 2, 384] as inputs, `positions.npy` beside it; scripts/bench/turn_window.py runs
it): at 800 frames its probabilities equal the shipped file's (84 cuts, max |difference| 0), but a
shorter window changes the model's calls (docs/benchmarks.md, "End-of-turn model: a shorter
window"), so it is not shipped.

Shipped as `models/smart-turn-v3.2/smart_turn.tflite` (`vad.end_of_turn`, stream/turn.py; copy
`--out`'s file there and update its SHA256SUMS and MODEL.md; on 2026-12-06 this script rebuilt the
shipped file byte for byte, and its verification, on that day's 84 wideband cuts, found 17 decisions
that differ at 0.5, median |difference| 0.029: MODEL.md). Status of the rebuild (2026-12-03): on the
82 verification cuts the TFLite model runs fully on XNNPACK (187 ops) in 28-37 ms per call
(onnxruntime: 58-77 ms), median |difference| 0.02 from onnxruntime, but 8 decisions of 82 flip at
0.5 (max difference 0.79), and the same with --fp32: so not our quantisation. Per layer (a float
numpy forward of these weights against onnxruntime's intermediate tensors, two cuts): relative error
2-5 % at the conv stem, 7 % after layer 0, 10 % after layer 1, then 12 -> 32 % across layer 2's
feed-forward block and 55 % at the end. A jump inside one block whose weights are found by their
bias names points at the ONNX file's own per-tensor uint8 activations (Whisper's outlier activations
after GELU) more than at the mapping; a float reference (the fp32 Smart Turn ONNX, published on
Hugging Face only) would settle it. Since neither is the float original, the rebuild was judged on
what the daemon uses it for: python -m scripts.bench.endpoint_verdicts --turn-model litert|auto
separates whole utterances from fragments as well as the original does or better (docs/frontend.md,
docs/benchmarks.md "End-of-turn model")."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from scripts import REPO

N_LAYERS = 4
D_MODEL = 384
HEADS = 6
FRAMES = 800  # 8 s of 10 ms mel frames
POSITIONS = FRAMES // 2


# ---- the ONNX weights ------------------------------------------------------------------------


def dequantized(model) -> dict[str, np.ndarray]:
    """Every DequantizeLinear of an initializer, as float32, by the node's output name; plus the
    float initializers by their own names."""
    from onnx import numpy_helper

    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    out = {name: a.astype(np.float32) for name, a in inits.items() if a.dtype == np.float32}
    for n in model.graph.node:
        if n.op_type != "DequantizeLinear" or n.input[0] not in inits:
            continue
        q = inits[n.input[0]].astype(np.float32)
        scale = inits[n.input[1]].astype(np.float32)
        zero = inits[n.input[2]].astype(np.float32) if len(n.input) > 2 else np.zeros_like(scale)
        axis = next((a.i for a in n.attribute if a.name == "axis"), 1)
        if scale.ndim == 1 and q.ndim > 1:
            shape = [1] * q.ndim
            shape[axis] = -1
            scale, zero = scale.reshape(shape), zero.reshape(shape)
        out[n.output[0]] = (q - zero) * scale
    return out


def read_weights(onnx_bytes: bytes) -> dict[str, np.ndarray]:
    """CTranslate2-style names (what scripts/convert/whisper/tf_graphs.py reads) -> arrays, traced from the graph:
    each MatMul's weight is named by the bias added to its output; the one MatMul per layer without
    a bias is the key projection."""
    import onnx

    model = onnx.load_model_from_string(onnx_bytes)
    w = dequantized(model)
    nodes = list(model.graph.node)
    consumers: dict[str, list] = {}
    for n in nodes:
        for i in n.input:
            consumers.setdefault(i, []).append(n)

    def weight_of(matmul) -> np.ndarray:
        return w[matmul.input[1]]

    def deq_output(name: str) -> str:
        """A node's output after its QuantizeLinear -> DequantizeLinear pair (or itself)."""
        for c in consumers.get(name, []):
            if c.op_type == "QuantizeLinear":
                for d in consumers.get(c.output[0], []):
                    if d.op_type == "DequantizeLinear":
                        return d.output[0]
        return name

    by_bias: dict[str, np.ndarray] = {}
    unbiased: list[tuple[int, np.ndarray]] = []
    for idx, n in enumerate(nodes):
        if n.op_type not in ("MatMul", "Gemm") or n.input[1] not in w:
            continue
        if n.op_type == "Gemm":
            by_bias[n.input[2]] = w[n.input[1]].T  # transB=1: [out, in] -> [in, out]
            continue
        adds = [c for c in consumers.get(deq_output(n.output[0]), []) if c.op_type == "Add"]
        bias = next((i for c in adds for i in c.input if i in w and w[i].ndim == 1), None)
        if bias is None:
            unbiased.append((idx, weight_of(n)))
        else:
            by_bias[bias] = weight_of(n)
    if len(unbiased) != N_LAYERS:
        raise SystemExit(f"expected {N_LAYERS} key projections without bias, found {len(unbiased)}: not Smart Turn v3")

    ct2: dict[str, np.ndarray] = {}

    def linear(dst: str, bias_name: str) -> None:
        ct2[dst + "/weight"] = np.ascontiguousarray(by_bias[bias_name].T)  # [out, in], as CTranslate2
        ct2[dst + "/bias"] = w[bias_name]

    def norm(dst: str, src: str) -> None:
        ct2[dst + "/gamma"], ct2[dst + "/beta"] = w[src + ".weight"], w[src + ".bias"]

    for conv in ("conv1", "conv2"):
        ct2[f"encoder/{conv}/weight"] = w[f"inner.encoder.{conv}.weight_DequantizeLinear_Output"]  # [out, in, k]
        ct2[f"encoder/{conv}/bias"] = w[f"inner.encoder.{conv}.bias"]
    ct2["positions"] = w["inner.encoder.embed_positions.weight"]
    for i in range(N_LAYERS):
        src, dst = f"inner.encoder.layers.{i}", f"encoder/layer_{i}"
        q, v = by_bias[f"{src}.self_attn.q_proj.bias"], by_bias[f"{src}.self_attn.v_proj.bias"]
        k = unbiased[i][1]
        ct2[f"{dst}/self_attention/linear_0/weight"] = np.ascontiguousarray(np.concatenate([q, k, v], axis=1).T)
        ct2[f"{dst}/self_attention/linear_0/bias"] = np.concatenate(
            [w[f"{src}.self_attn.q_proj.bias"], np.zeros(D_MODEL, np.float32), w[f"{src}.self_attn.v_proj.bias"]]
        )
        linear(f"{dst}/self_attention/linear_1", f"{src}.self_attn.out_proj.bias")
        norm(f"{dst}/self_attention/layer_norm", f"{src}.self_attn_layer_norm")
        norm(f"{dst}/ffn/layer_norm", f"{src}.final_layer_norm")
        linear(f"{dst}/ffn/linear_0", f"{src}.fc1.bias")
        linear(f"{dst}/ffn/linear_1", f"{src}.fc2.bias")
    norm("encoder/layer_norm", "inner.encoder.layer_norm")
    linear("pool/linear_0", "inner.pool_attention.0.bias")
    linear("pool/linear_1", "inner.pool_attention.2.bias")
    linear("classifier/linear_0", "inner.classifier.0.bias")
    norm("classifier/layer_norm", "inner.classifier.1")
    linear("classifier/linear_1", "inner.classifier.4.bias")
    linear("classifier/linear_2", "inner.classifier.6.bias")
    return ct2


class _Source:
    """What scripts/whisper_tf.Weights reads from a CTranslate2 model: get() and variables."""

    def __init__(self, arrays: dict[str, np.ndarray]) -> None:
        self.variables = arrays

    def get(self, name: str) -> np.ndarray:
        return self.variables[name]


# ---- the TensorFlow graph --------------------------------------------------------------------


def smart_turn_fn(arrays: dict[str, np.ndarray], window: bool = False):
    """The shipped graph: mel [1, 1, 800, 80] -> prob [1, 1]. `window`: mel [1, 1, T, 80] (T even,
    T <= 800) and positions [T / 2, 384] -> prob: the positional rows are an input, as in our Whisper
    encoder (tf_graphs.encoder_fn), so that one graph serves every window length with no
    shape-dependent slicing; the caller gives the LAST T / 2 rows of the 400 (the model was trained
    with the speech at the end of its 8 s). Not shipped: see --window."""
    import tensorflow as tf

    from scripts.convert.whisper import tf_graphs as wt

    w = wt.Weights(_Source({**arrays, "decoder/num_heads": np.array(HEADS), "encoder/num_heads": np.array(HEADS)}))

    def predict(mel, positions):
        x = wt._conv(mel, w, "encoder/conv1", 1)
        x = wt._conv(x, w, "encoder/conv2", 2)
        x = tf.reshape(x, [-1, D_MODEL]) + positions
        for i in range(N_LAYERS):
            p = f"encoder/layer_{i}/self_attention"
            h = wt.layer_norm(x, w, p + "/layer_norm")
            q = wt.heads_first(wt.dense(h, w.linear(p + "/linear_0", slice(0, D_MODEL))), w)
            k = wt.heads_first(wt.dense(h, w.linear(p + "/linear_0", slice(D_MODEL, 2 * D_MODEL))), w)
            v = wt.heads_first(wt.dense(h, w.linear(p + "/linear_0", slice(2 * D_MODEL, 3 * D_MODEL))), w)
            x = x + wt.dense(wt.heads_merged(wt.attention(q, k, v, w), w), w.linear(p + "/linear_1"))
            x = wt.ffn(x, w, f"encoder/layer_{i}/ffn")
        x = wt.layer_norm(x, w, "encoder/layer_norm")  # [T / 2, 384]
        score = wt.dense(tf.tanh(wt.dense(x, w.linear("pool/linear_0"))), w.linear("pool/linear_1"))  # [T / 2, 1]
        weights = tf.nn.softmax(score, axis=0)
        pooled = tf.reduce_sum(x * weights, axis=0, keepdims=True)  # [1, 384]
        h = wt.dense(pooled, w.linear("classifier/linear_0"))
        h = tf.nn.gelu(wt.layer_norm(h, w, "classifier/layer_norm"), approximate=False)
        h = tf.nn.gelu(wt.dense(h, w.linear("classifier/linear_1")), approximate=False)
        return {"prob": tf.sigmoid(wt.dense(h, w.linear("classifier/linear_2")))}

    if window:
        spec = [
            tf.TensorSpec([1, 1, None, 80], tf.float32, name="mel"),
            tf.TensorSpec([None, D_MODEL], tf.float32, name="positions"),
        ]
        return tf.function(predict, input_signature=spec)
    positions = tf.constant(arrays["positions"].astype(np.float32))
    spec = [tf.TensorSpec([1, 1, FRAMES, 80], tf.float32, name="mel")]
    return tf.function(lambda mel: predict(mel, positions), input_signature=spec)


# ---- verification ----------------------------------------------------------------------------


def verification_cuts() -> list[tuple[str, np.ndarray]]:
    """Whole utterances and mid-sentence fragments of the live-noise corpus, each with 100 ms of
    silence after it, clean and in pink noise at 10 dB (float32 in [-1, 1])."""
    from scripts.bench.endpoint_verdicts import corpus_cuts

    cuts = []
    for noise, label in ((None, "clean"), ("pink", "pink-10")):
        for u, kind, x in corpus_cuts(100, noise, 10.0):
            cuts.append((f"{u.name} {kind} {label}", (x / 32768.0).astype(np.float32)))
    return cuts


def compare(tflite_bytes: bytes, onnx_bytes: bytes, positions: np.ndarray | None) -> dict:
    """`positions`: all 400 rows, for a --window graph (checked here at 8 s, as the shipped one)."""
    from scripts.convert.silero import runners
    from voxnode.asr.mel import LogMel
    from voxnode.stream.turn import turn_features

    runner, deleg, sess = runners(tflite_bytes, onnx_bytes)
    mel = LogMel()
    rows, t_lite, t_onnx = [], [], []
    for name, x in verification_cuts():
        f = turn_features(x, mel)
        t0 = time.perf_counter()
        inputs = {"mel": f[None, None]} | ({"positions": positions} if positions is not None else {})
        p_l = float(runner(**inputs)["prob"].reshape(-1)[0])
        t1 = time.perf_counter()
        p_o = float(np.asarray(sess.run(None, {"input_features": f.T[None]})[0]).reshape(-1)[0])
        t2 = time.perf_counter()
        t_lite.append(t1 - t0)
        t_onnx.append(t2 - t1)
        rows.append((name, p_l, p_o))
    d = np.array([abs(a - b) for _, a, b in rows])
    return {
        "cuts": len(rows),
        "max_abs_diff": float(d.max()),
        "median_abs_diff": float(np.median(d)),
        "decision_flips_at_0.5": sum((a >= 0.5) != (b >= 0.5) for _, a, b in rows),
        "decision_flips_at_0.95": sum((a >= 0.95) != (b >= 0.95) for _, a, b in rows),
        "ms_per_call_litert": round(1e3 * float(np.median(t_lite)), 1),
        "ms_per_call_onnxruntime": round(1e3 * float(np.median(t_onnx)), 1),
        "ops": deleg.ops_total,
        "not_delegated": list(deleg.not_delegated),
        "per_cut": [(n, round(a, 4), round(b, 4)) for n, a, b in rows],
    }


def main(argv: list[str] | None = None) -> int:
    import tensorflow as tf

    from scripts.bench import audio_corpus as ac
    from scripts.bench.endpoint_verdicts import fetch_turn_model

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=REPO / "build" / "smart-turn-v3.2")
    p.add_argument("--no-verify", action="store_true")
    p.add_argument(
        "--fp32", action="store_true", help="float32 weights (no quantisation): to tell rebuild from quantisation error"
    )
    p.add_argument(
        "--window",
        action="store_true",
        help="a graph for any window up to 8 s (positions as an input, positions.npy beside it): measured "
        "with scripts.bench.endpoint_verdicts --turn-min-seconds, not shipped (it changes the verdicts)",
    )
    args = p.parse_args(argv)
    onnx_bytes = fetch_turn_model(ac.cache_dir() / "smart-turn").read_bytes()
    arrays = read_weights(onnx_bytes)
    positions = arrays["positions"].astype(np.float32) if args.window else None  # [400, 384]
    fn = smart_turn_fn(arrays, args.window)
    with tempfile.TemporaryDirectory() as tmp:
        module = tf.Module()
        module.fn = fn
        saved = Path(tmp) / "saved"
        tf.saved_model.save(module, str(saved), signatures={"serving_default": fn.get_concrete_function()})
        conv = tf.lite.TFLiteConverter.from_saved_model(str(saved))
        if not args.fp32:
            conv.optimizations = [tf.lite.Optimize.DEFAULT]  # int8 weights, float activations
        tflite = conv.convert()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "smart_turn.tflite").write_bytes(tflite)
    if positions is not None:
        np.save(args.out / "positions.npy", positions)
    print(f"wrote {args.out / 'smart_turn.tflite'} ({len(tflite) / 1e6:.1f} MB)", flush=True)
    if not args.no_verify:
        report = compare(tflite, onnx_bytes, positions)
        (args.out / "verification.json").write_text(json.dumps(report, indent=2) + "\n")
        summary = {k: v for k, v in report.items() if k != "per_cut"}
        print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.exit(main())
