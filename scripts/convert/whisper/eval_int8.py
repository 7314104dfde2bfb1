"""Where the int8 encoder's error comes from, and what keeping layers in float buys (build-time).

Needs the float32 model (`make convert-model` builds it in build/whisper-tiny.en-fp32) and
TensorFlow's flatbuffer tools (.venv-convert):

    .venv-convert/bin/python -m scripts.convert.whisper.eval_int8 --fp32-dir build/whisper-tiny.en-fp32

1. Sensitivity: for each layer group, an int8 encoder with only that group in float32; the
   error left is measured on real speech (scripts/bench/speech_corpus.py) as the relative L2 distance
   of the cross-attention keys/values (what the decoder reads) from the float32 encoder's.
2. Greedy selection: groups added in order of sensitivity; error, file size and encode time.
3. Writes the chosen candidates as model folders (build/int8-float-<n>/) for bench/asr.py to
   measure WER: `bench/asr.py --section int8 --engines "voxnode model_dir=build/int8-float-2" ...`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
from pathlib import Path

import numpy as np

from scripts import REPO, RESULTS
from scripts.convert.whisper import mixed_precision

GROUPS = {"conv1": ["conv1"], "conv2": ["conv2"]}
for _i in range(mixed_precision.ENCODER_LAYERS):
    GROUPS[f"L{_i}.attn"] = [f"L{_i}.{r}" for r in ("q", "k", "v", "out")]
    GROUPS[f"L{_i}.ffn"] = [f"L{_i}.ff1", f"L{_i}.ff2"]
GROUPS["cross"] = [f"cross.{kv}{_i}" for _i in range(mixed_precision.ENCODER_LAYERS) for kv in "kv"]


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class Encoder:
    def __init__(self, model: bytes, positions: np.ndarray, threads: int = 1):
        from ai_edge_litert.interpreter import Interpreter

        from voxnode.asr.whisper.encoder import EncoderRunner

        self.it = Interpreter(model_content=model, num_threads=threads)
        self.it.allocate_tensors()
        self.runner = EncoderRunner(self.it, positions, mixed_precision.ENCODER_LAYERS)

    def __call__(self, mel: np.ndarray) -> np.ndarray:
        out = self.runner.run(mel)
        return np.concatenate([out[k].ravel() for k in sorted(out)])


def mels(n_asterisk: int) -> list[np.ndarray]:
    from scripts.bench import speech_corpus
    from voxnode.asr.mel import LogMel
    from voxnode.asr.whisper.window import first_window

    logmel = LogMel()
    out = []
    for u in speech_corpus.real_speech(n_asterisk=n_asterisk):
        window = first_window(u.duration_s)
        padded = np.zeros(int(window * 16000), np.float32)
        padded[: len(u.audio)] = u.audio / 32768.0
        m = logmel(padded)
        out.append(m[: 2 * (len(m) // 2)])
    return out


def rel_error(enc: Encoder, refs: list[np.ndarray], inputs: list[np.ndarray]) -> tuple[float, float]:
    errs = [float(np.linalg.norm(enc(m) - r) / np.linalg.norm(r)) for m, r in zip(inputs, refs, strict=True)]
    return float(np.median(errs)), float(np.max(errs))


def encode_cpu_ms(enc: Encoder, inputs: list[np.ndarray], repeat: int = 3) -> float:
    enc(inputs[0])
    c0 = cpu_s()
    for _ in range(repeat):
        for m in inputs:
            enc(m)
    return (cpu_s() - c0) * 1000 / (repeat * len(inputs))


def write_model_dir(src: Path, dst: Path, encoder: bytes) -> None:
    from scripts.convert.whisper import convert as convert_model

    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    (dst / "encoder.int8.tflite").write_bytes(encoder)
    convert_model.write_manifest(dst, json.loads((dst / "manifest.json").read_text())["variants"])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--int8-dir", type=Path, default=REPO / "models" / "whisper-tiny.en")
    p.add_argument("--fp32-dir", type=Path, default=REPO / "build" / "whisper-tiny.en-fp32")
    p.add_argument("--asterisk", type=int, default=20, help="Asterisk prompts besides the 10 pocketsphinx clips")
    p.add_argument(
        "--candidates",
        type=int,
        nargs="*",
        default=[1, 2, 3, 4],
        help="write model folders with the n most sensitive groups in float",
    )
    p.add_argument("--out", type=Path, default=REPO / "build")
    p.add_argument("--json", type=Path, default=RESULTS / "asr_int8_sensitivity.json")
    args = p.parse_args()

    int8 = (args.int8_dir / "encoder.int8.tflite").read_bytes()
    fp32 = (args.fp32_dir / "encoder.fp32.tflite").read_bytes()
    positions = np.load(args.int8_dir / "encoder_positions.npy")
    inputs = mels(args.asterisk)
    reference = Encoder(fp32, positions)
    refs = [reference(m) for m in inputs]
    layers = {name for _, name, _ in mixed_precision.weight_layers(int8)}
    unknown = {n for g in GROUPS.values() for n in g} - layers
    if unknown:
        raise SystemExit(f"encoder has no weight ops named {sorted(unknown)}: naming out of step with whisper_tf")

    rows = {"int8 (all)": {"error": rel_error(Encoder(int8, positions), refs, inputs), "bytes": len(int8)}}
    print(f"int8: {rows['int8 (all)']}", flush=True)
    sens = {}
    for group, names in GROUPS.items():
        model = mixed_precision.keep_float(int8, fp32, set(names))
        sens[group] = {"error": rel_error(Encoder(model, positions), refs, inputs), "bytes": len(model)}
        print(f"  float {group}: {sens[group]}", flush=True)
    order = sorted(sens, key=lambda g: sens[g]["error"][0])
    cumulative = []
    chosen: list[str] = []
    for n, group in enumerate(order[: max(args.candidates or [0]) or 0], 1):
        chosen.append(group)
        model = mixed_precision.keep_float(int8, fp32, {x for g in chosen for x in GROUPS[g]})
        enc = Encoder(model, positions)
        row = {
            "groups": list(chosen),
            "error": rel_error(enc, refs, inputs),
            "bytes": len(model),
            "encode_cpu_ms": encode_cpu_ms(enc, inputs),
        }
        cumulative.append(row)
        print(f"  cumulative {n}: {row}", flush=True)
        if n in args.candidates:
            write_model_dir(args.int8_dir, args.out / f"int8-float-{n}", model)
    timing = {"int8": encode_cpu_ms(Encoder(int8, positions), inputs), "fp32": encode_cpu_ms(reference, inputs)}
    report = {
        "clips": len(inputs),
        "int8": rows["int8 (all)"],
        "fp32_bytes": len(fp32),
        "sensitivity": sens,
        "order": order,
        "cumulative": cumulative,
        "encode_cpu_ms": timing,
    }
    args.json.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.exit(main())
