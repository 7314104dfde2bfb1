"""Convert Silero VAD v6 (16 kHz) to TFLite for `vad.engine = "silero"`.

Build-time only, in the conversion venv (TensorFlow, onnx and onnxruntime never enter the runtime):

    make convert-silero
    # = .venv-convert/bin/python -m scripts.convert.silero

Source: the `silero-vad` wheel on PyPI (MIT), fetched with `pip download --no-deps` (it depends on
torch, which we do not need: only its ONNX file is read). The network is rebuilt in TensorFlow from
the weights of `silero_vad_16k_op15.onnx` (STFT as a strided convolution, 4 conv layers, one LSTM
cell, a 1x1 conv head), converted to float32 TFLite, and checked against onnxruntime running the
official `silero_vad.onnx` the way Silero's own wrapper calls it (64 samples of context + 512 new
samples per call, state carried between calls), on real speech and on noise.

Writes into --out (default daemon/voxnode/models/bundled/silero-vad-v6/, package data): silero_vad.tflite,
SHA256SUMS, LICENSE, MODEL.md. The daemon reads only the .tflite and SHA256SUMS.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

from scripts import REPO
from voxnode.frontend.silero_vad import CONTEXT, MODEL_FILE, STATE_SHAPE, WINDOW
from voxnode.models.files import sha256_of

SOURCE = "silero-vad==6.2.3"
ONNX_WEIGHTS = "silero_vad/data/silero_vad_16k_op15.onnx"  # 16 kHz only, plain initializers
ONNX_REFERENCE = "silero_vad/data/silero_vad.onnx"  # the file Silero's OnnxWrapper loads by default
LICENSE_IN_WHEEL = "silero_vad-6.2.3.dist-info/licenses/LICENSE"
DEFAULT_OUT = REPO / "daemon" / "voxnode" / "models" / "bundled" / "silero-vad-v6"
REFLECT = 64  # Silero pads the right edge of each 576-sample input by reflection before its STFT


def fetch_wheel(cache: Path) -> Path:
    cache.mkdir(parents=True, exist_ok=True)
    found = sorted(cache.glob("silero_vad-6.2.3-*.whl"))
    if not found:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", SOURCE, "-d", str(cache)], check=True
        )
        found = sorted(cache.glob("silero_vad-6.2.3-*.whl"))
    if not found:
        raise SystemExit(f"pip download {SOURCE} gave no wheel in {cache}")
    return found[0]


def read_weights(onnx_bytes: bytes) -> dict[str, np.ndarray]:
    import onnx
    from onnx import numpy_helper

    model = onnx.load_model_from_string(onnx_bytes)
    w = {i.name: numpy_helper.to_array(i).astype(np.float32) for i in model.graph.initializer}
    expected = {
        "model.stft.forward_basis_buffer": (258, 1, 256),
        "model.decoder.rnn.weight_ih": (512, 128),
        "model.decoder.decoder.2.weight": (1, 128, 1),
    }
    for name, shape in expected.items():
        if name not in w or w[name].shape != shape:
            raise SystemExit(f"{ONNX_WEIGHTS}: {name} missing or not {shape}: not the Silero v6 layout")
    return w


def build(w: dict[str, np.ndarray]):
    """The Silero v6 16 kHz step as a TF function: (audio [1, 576], state [2, 128]) -> prob, state."""
    import tensorflow as tf

    def conv_weight(name: str):  # torch Conv1d (out, in, k) -> tf.nn.conv1d (k, in, out)
        return tf.constant(np.transpose(w[name], (2, 1, 0)))

    stft = conv_weight("model.stft.forward_basis_buffer")
    encoder = [
        (
            conv_weight(f"model.encoder.{k}.reparam_conv.weight"),
            tf.constant(w[f"model.encoder.{k}.reparam_conv.bias"]),
            stride,
        )
        for k, stride in enumerate((1, 2, 2, 1))
    ]
    w_ih = tf.constant(w["model.decoder.rnn.weight_ih"].T)
    w_hh = tf.constant(w["model.decoder.rnn.weight_hh"].T)
    bias = tf.constant(w["model.decoder.rnn.bias_ih"] + w["model.decoder.rnn.bias_hh"])
    w_out = tf.constant(w["model.decoder.decoder.2.weight"][0, :, 0][:, None])
    b_out = tf.constant(w["model.decoder.decoder.2.bias"])
    # Reflection of samples [n-65, n-2] as a constant permutation matmul: XNNPACK takes
    # FULLY_CONNECTED, while MIRROR_PAD or REVERSE_V2 would stay on the builtin kernels.
    flip = tf.constant(np.eye(REFLECT, dtype=np.float32)[::-1].copy())
    n = CONTEXT + WINDOW

    @tf.function(
        input_signature=[
            tf.TensorSpec([1, n], tf.float32, name="audio"),
            tf.TensorSpec(list(STATE_SHAPE), tf.float32, name="state"),
        ]
    )
    def step(audio, state):
        tail = tf.matmul(audio[:, n - REFLECT - 1 : n - 1], flip)
        x = tf.reshape(tf.concat([audio, tail], axis=1), [1, n + REFLECT, 1])
        spec = tf.nn.conv1d(x, stft, stride=128, padding="VALID")  # [1, 4, 258]: 129 real + 129 imaginary
        re, im = spec[:, :, :129], spec[:, :, 129:]
        y = tf.sqrt(re * re + im * im)
        for weight, b, stride in encoder:
            # torch pads 1 on both sides; TF "SAME" with stride 2 would pad only the right.
            y = tf.pad(y, [[0, 0], [1, 1], [0, 0]])
            y = tf.nn.relu(tf.nn.conv1d(y, weight, stride=stride, padding="VALID") + b)
        y = tf.reshape(y, [1, 128])
        h, c = state[0:1], state[1:2]
        i, f, g, o = tf.split(tf.matmul(y, w_ih) + tf.matmul(h, w_hh) + bias, 4, axis=1)
        c = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(g)
        h = tf.sigmoid(o) * tf.tanh(c)
        prob = tf.sigmoid(tf.matmul(tf.nn.relu(h), w_out) + b_out)
        return {"prob": prob, "state": tf.concat([h, c], axis=0)}

    return step


def to_tflite(step, workdir: Path) -> bytes:
    import tensorflow as tf

    module = tf.Module()
    module.step = step
    saved = workdir / "saved"
    tf.saved_model.save(module, str(saved), signatures={"serving_default": step.get_concrete_function()})
    return tf.lite.TFLiteConverter.from_saved_model(str(saved)).convert()


def verification_audio() -> list[tuple[str, np.ndarray]]:
    """Real speech (pocketsphinx-testdata, Asterisk prompts) and noise, float32 in [-1, 1]."""
    from scripts.bench import audio_corpus as ac
    from scripts.bench import speech_corpus as sc

    clips = [(u.name, u.audio / 32768.0) for u in sc.real_speech(n_asterisk=6)]
    rng = np.random.default_rng(3)
    clips.append(("white-noise", ac.at_dbfs(ac.white(5 * 16000, rng), -30) / 32768.0))
    clips.append(("pink-noise", ac.at_dbfs(ac.pink(5 * 16000, rng), -30) / 32768.0))
    return [(name, x.astype(np.float32)) for name, x in clips]


def runners(tflite_bytes: bytes, onnx_bytes: bytes):
    """The converted model on LiteRT (signature runner, XNNPACK delegation) and the source on
    onnxruntime, both on one thread: what a conversion is checked with (also convert/smart_turn.py)."""
    import onnxruntime as ort

    from voxnode.models.runtime import delegation, load_runtime

    interp = load_runtime().interpreter_class(model_content=tflite_bytes, num_threads=1)
    interp.allocate_tensors()
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(onnx_bytes, sess_options=opts, providers=["CPUExecutionProvider"])
    return interp.get_signature_runner(), delegation(interp), sess


def compare(tflite_bytes: bytes, onnx_bytes: bytes) -> dict:
    runner, deleg, sess = runners(tflite_bytes, onnx_bytes)
    worst, windows, flips = 0.0, 0, 0
    per_clip = []
    for name, x in verification_audio():
        state_t = np.zeros(STATE_SHAPE, np.float32)
        state_o = np.zeros((2, 1, 128), np.float32)
        ctx = np.zeros(CONTEXT, np.float32)
        clip_worst = 0.0
        for k in range(len(x) // WINDOW):
            inp = np.concatenate([ctx, x[k * WINDOW : (k + 1) * WINDOW]])[None]
            ctx = inp[0, -CONTEXT:]
            out = runner(audio=inp, state=state_t)
            p_t, state_t = float(out["prob"][0, 0]), out["state"]
            o, state_o = sess.run(None, {"input": inp, "state": state_o, "sr": np.array(16000, np.int64)})
            p_o = float(o[0, 0])
            d = abs(p_t - p_o)
            clip_worst = max(clip_worst, d)
            flips += (p_t >= 0.5) != (p_o >= 0.5)
            windows += 1
        worst = max(worst, clip_worst)
        per_clip.append((name, clip_worst))
    return {
        "windows": windows,
        "max_abs_diff": worst,
        "decision_flips_at_0.5": flips,
        "per_clip": per_clip,
        "ops": deleg.ops_total,
        "not_delegated": list(deleg.not_delegated),
    }


def write_model_md(out: Path, wheel: Path, report: dict, sums: dict[str, str]) -> None:
    rows = "\n".join(f"| `{name}` | `{digest}` |" for name, digest in sums.items())
    left = ", ".join(report["not_delegated"]) or "none"
    text = f"""# Silero VAD v6 (16 kHz) for voxnode (TFLite / LiteRT)

Used by `vad.engine = "silero"` (`daemon/voxnode/frontend/silero_vad.py`); see docs/frontend.md.

## Provenance
- Source: PyPI `{SOURCE}` (`{wheel.name}`, sha256 `{sha256_of(wheel)}`), file `{ONNX_WEIGHTS}`
  (weights) and `{ONNX_REFERENCE}` (reference for the check below).
- Silero VAD by the Silero Team, <https://github.com/snakers4/silero-vad>. Licence: MIT,
  Copyright (c) 2020-present Silero Team; the full text is in `LICENSE` in this folder.
- Converted by `scripts/convert/silero.py`: the network is rebuilt in TensorFlow from the ONNX
  initializers and converted to float32 TFLite (1.2 MB; not quantised: one call takes
  ~0.05 ms per 32 ms window on the x86 development machine).
  TensorFlow, onnx and onnxruntime are build-time only (`.venv-convert`).
- Converted on {time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}. Running the conversion again gives
  a byte-identical file.

## Interface
- input `audio` float32 [1, {CONTEXT + WINDOW}]: {CONTEXT} samples of left context followed by
  {WINDOW} new samples, 16 kHz, in [-1, 1]. Silero's wrapper (and the check below) passes the
  previous call's last {CONTEXT} samples; voxnode passes the mirror image of the window's start,
  as whisper.cpp does, which measured better under loud music (docs/frontend.md);
- input `state` float32 {list(STATE_SHAPE)}: LSTM h and c from the previous call (zeros at the start);
- outputs `prob` float32 [1, 1] (speech probability of the {WINDOW} new samples) and `state`.
- {report["ops"]} ops, all delegated to XNNPACK (left on the builtin kernels: {left}).

## Check against the official ONNX model
onnxruntime running `{ONNX_REFERENCE}` with Silero's own calling convention, on {report["windows"]}
windows of real speech (pocketsphinx-testdata, 6 Asterisk prompts) and white/pink noise:
largest difference in speech probability {report["max_abs_diff"]:.2e}; decisions at 0.5 that differ:
{report["decision_flips_at_0.5"]}.

## Files
| file | sha256 |
|---|---|
{rows}
"""
    (out / "MODEL.md").write_text(text)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.add_argument("--cache", type=Path, default=REPO / "build" / "silero-vad", help="where the wheel is kept")
    args = p.parse_args(argv)
    wheel = fetch_wheel(args.cache)
    with zipfile.ZipFile(wheel) as z:
        weights_onnx = z.read(ONNX_WEIGHTS)
        reference_onnx = z.read(ONNX_REFERENCE)
        licence = z.read(LICENSE_IN_WHEEL)
    with tempfile.TemporaryDirectory() as tmp:
        model = to_tflite(build(read_weights(weights_onnx)), Path(tmp))
    report = compare(model, reference_onnx)
    print(
        f"{report['windows']} windows: max |p_tflite - p_onnx| = {report['max_abs_diff']:.2e}, "
        f"decision flips at 0.5: {report['decision_flips_at_0.5']}; {report['ops']} ops, "
        f"not delegated: {report['not_delegated'] or 'none'}"
    )
    if report["max_abs_diff"] > 1e-4 or report["not_delegated"]:
        raise SystemExit("conversion check failed: not writing the model")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / MODEL_FILE).write_bytes(model)
    (args.out / "LICENSE").write_bytes(licence)
    sums = {name: sha256_of(args.out / name) for name in (MODEL_FILE, "LICENSE")}
    (args.out / "SHA256SUMS").write_text("".join(f"{d}  {n}\n" for n, d in sums.items()))
    write_model_md(args.out, wheel, report, sums)
    print(f"wrote {args.out / MODEL_FILE} ({len(model)} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
