"""A decoder that computes logits only for a shortlist of the vocabulary (issue 23), made from a
converted model directory by editing its decoder's flatbuffer (no TensorFlow needed).

A decoder step is bound by reading its weights (docs/benchmarks.md "Where a decoder step goes"):
~28 MB of int8 in tiny.en, 20 MB of them the tied output projection [51864, 384]. English
Whisper's vocabulary is GPT-2's byte-level BPE: ids 0-255 are the bytes and later ids are merges
in the order BPE learnt them (roughly by frequency), so "every id below K, plus every special and
timestamp token (ids from <|endoftext|> on)" is a shortlist made without outside data, and any
word can still be spelt from shorter pieces.

The projection's rows of the kept ids are cut out of the tensor as they are (the same int8 values
and per-row scales), so every kept logit is the full model's, bit for bit. The input embeddings,
which the runtime reads from the projection's weight, are written beside the model instead:
token_embedding.npy (the full [vocab, d_model] table, as stored in the decoder) and
token_embedding_scales.npy (its per-row scales), with vocab_shortlist.npy (the kept ids, in the
order of the logits) and a `vocab_shortlist` entry in model_config.json naming the three. The
daemon does not read these yet: scripts/bench/shortlist_decoder.py runs such a model in the engine
for the benchmarks (logits mapped back to full-vocabulary ids, -inf elsewhere, so the search is
unchanged), docs/benchmarks.md "Decoder logits over a vocabulary shortlist" has what it gave.

    python -m scripts.convert.whisper.shortlist models/whisper-tiny.en build/whisper-tiny.en-v16384 --below 16384
    python -m scripts.convert.whisper.shortlist models/whisper-tiny.en build/wf --below 1024 --text-ids ids.npy
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import numpy as np

CONFIG_KEY = "vocab_shortlist"  # model_config.json's entry naming the files below
IDS_FILE = "vocab_shortlist.npy"
EMBEDDING_FILE = "token_embedding.npy"
SCALES_FILE = "token_embedding_scales.npy"
FULLY_CONNECTED = 9  # BuiltinOperator.FULLY_CONNECTED


def kept_ids(vocab_size: int, below: int, first_special: int, text: np.ndarray | None = None) -> np.ndarray:
    """Every id below `below` (at most the text tokens) and the text ids `text`, then every id from
    `first_special` (<|endoftext|>) on: the special and timestamp tokens, whose logits the start
    sequence's no-speech probability is read among."""
    if below < 256:
        raise ValueError(f"a shortlist below {below} would lose byte tokens: every word needs ids 0-255")
    kept = np.arange(min(below, first_special), dtype=np.int32)
    if text is not None:
        kept = np.union1d(kept, np.asarray(text, np.int32)[np.asarray(text) < first_special]).astype(np.int32)
    return np.concatenate([kept, np.arange(first_special, vocab_size, dtype=np.int32)])


def _projection(model, sub) -> tuple[int, int]:
    """(operator index, weight tensor index) of the FULLY_CONNECTED giving the `logits` output."""
    logits = next(
        (o.tensorIndex for s in model.signatureDefs for o in s.outputs if o.name == b"logits"),
        None,
    )
    for i, op in enumerate(sub.operators):
        if model.operatorCodes[op.opcodeIndex].builtinCode == FULLY_CONNECTED and logits in op.outputs:
            return i, int(op.inputs[1])
    raise SystemExit("decoder model: no FULLY_CONNECTED op gives the logits")


def slice_decoder(src: Path, dst: Path, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """Write `src`'s decoder with its output projection cut to the rows `ids`; returns the full
    table and its per-row scales (None for a float model) for the input embeddings."""
    from ai_edge_litert.tools import flatbuffer_utils as fb

    model = fb.read_model(str(src))
    sub = model.subgraphs[0]
    op_index, w_index = _projection(model, sub)
    users = [i for i, op in enumerate(sub.operators) if w_index in op.inputs and i != op_index]
    if users:
        raise SystemExit(f"{src}: the output projection's weight is read by other ops too ({users})")
    weight = sub.tensors[w_index]
    vocab, width = (int(n) for n in weight.shape)
    dtype = {fb.TensorType.INT8: np.int8, fb.TensorType.FLOAT32: np.float32}.get(weight.type)
    if dtype is None:
        raise SystemExit(f"{src}: output projection of type {fb.type_to_name(weight.type)} is not supported")
    buffer = model.buffers[weight.buffer]
    table = np.frombuffer(np.asarray(buffer.data, np.uint8).tobytes(), dtype).reshape(vocab, width).copy()
    buffer.data = np.frombuffer(np.ascontiguousarray(table[ids]).tobytes(), np.uint8)
    weight.shape = np.asarray([len(ids), width], np.int32)
    scales = None
    q = weight.quantization
    if q is not None and q.scale is not None and len(q.scale) > 1:
        if q.quantizedDimension != 0 or (q.zeroPoint is not None and np.any(q.zeroPoint)):
            raise SystemExit(f"{src}: the projection is not quantised per row, symmetrically")
        scales = np.array(q.scale, np.float32)  # a copy: the model's arrays view the mapped file
        q.scale = scales[ids]
        q.zeroPoint = np.zeros(len(ids), np.int64)
    elif dtype is np.int8:
        scales = np.full(vocab, q.scale[0], np.float32)
    for t in sub.operators[op_index].outputs:
        out = sub.tensors[t]
        out.shape = np.asarray([*list(out.shape)[:-1], len(ids)], np.int32)
        if out.shapeSignature is not None:
            out.shapeSignature = np.asarray([*list(out.shapeSignature)[:-1], len(ids)], np.int32)
    tmp = dst.with_name(dst.name + ".tmp")
    fb.write_model(model, str(tmp))
    tmp.replace(dst)  # `src` may be `dst`, still mapped by `model`
    return table, scales


def apply(out: Path, below: int, name: str | None = None, text: np.ndarray | None = None) -> dict:
    """Cut every decoder variant in `out` (a converted model directory) to the shortlist, in place,
    and write the embedding files and model_config.json's entry. Returns that entry."""
    from scripts.convert.whisper.convert import write_manifest

    config = json.loads((out / "model_config.json").read_text())
    if CONFIG_KEY in config:
        raise SystemExit(f"{out}: already has a vocabulary shortlist")
    manifest = json.loads((out / "manifest.json").read_text())
    decoders = sorted({v["decoder"] for v in manifest["variants"].values()})
    if len(decoders) != 1:
        raise SystemExit(f"{out}: a shortlist needs one decoder variant (has {decoders}): its embedding table is one")
    ids = kept_ids(int(config["vocab_size"]), below, int(config["tokens"]["eot"]), text)
    table, scales = slice_decoder(out / decoders[0], out / decoders[0], ids)
    np.save(out / IDS_FILE, ids)
    np.save(out / EMBEDDING_FILE, table)
    entry = {"below": below, "kept": len(ids), "ids": IDS_FILE, "embedding": EMBEDDING_FILE}
    if scales is not None:
        np.save(out / SCALES_FILE, scales)
        entry["embedding_scales"] = SCALES_FILE
    config[CONFIG_KEY] = entry
    if name:
        config["name"] = name
    (out / "model_config.json").write_text(json.dumps(config, indent=2) + "\n")
    write_manifest(out, name or manifest["model"], manifest["variants"])
    return entry


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("source", type=Path, help="a converted model directory (e.g. models/whisper-tiny.en)")
    p.add_argument("out", type=Path, help="where to write the shortlisted copy (must not exist)")
    p.add_argument("--below", type=int, required=True, help="keep every text id below this (e.g. 16384)")
    p.add_argument("--text-ids", type=Path, help="an .npy of further text ids to keep (e.g. from a word list)")
    args = p.parse_args(argv)
    if args.out.exists():
        p.error(f"{args.out} exists")
    shutil.copytree(args.source, args.out)
    for stale in ("verification.json", "MODEL.md"):
        (args.out / stale).unlink(missing_ok=True)
    entry = apply(args.out, args.below, text=None if args.text_ids is None else np.load(args.text_ids))
    print(f"wrote {args.out}: {entry}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
