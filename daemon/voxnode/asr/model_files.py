"""The model directory: manifest, checksums, and paths of one variant.

Every file the engine reads is checked against manifest.json before use so
that a truncated copy or a bad SD card sector gives a ModelError naming the
file, not garbage transcripts or a crash inside the interpreter.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from pathlib import Path

from voxnode.errors import ModelError

MANIFEST = "manifest.json"
SHARED_FILES = ("model_config.json", "vocabulary.txt", "merges.npy", "encoder_positions.npy", "decoder_positions.npy")


@dataclass(frozen=True)
class ModelFiles:
    root: Path
    name: str
    variant: str
    encoder: Path
    decoder: Path
    vocabulary: Path
    merges: Path
    encoder_positions: Path
    decoder_positions: Path
    config: dict


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


_checked_lock = threading.Lock()
_checked: dict[Path, bytes] = {}


def check_model_file(path: Path, owner: str) -> bytes:
    """A small model shipped inside the package (Silero VAD, the end-of-turn model), read and checked
    against the SHA256SUMS beside it; returns its bytes. `owner` (the config setting that loads
    it) opens every error message."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ModelError(f"{owner}: cannot read the model {path} ({e.strerror or e}); reinstall voxnode") from None
    sums = path.parent / "SHA256SUMS"
    try:
        lines = sums.read_text().splitlines()
    except OSError:
        lines = []
    want = next((p[0] for p in (line.split() for line in lines) if len(p) == 2 and p[1] == path.name), None)
    if want is None:
        raise ModelError(f"{owner}: {sums} is missing or has no line for {path.name}; reinstall voxnode")
    if hashlib.sha256(data).hexdigest() != want:
        raise ModelError(f"{owner}: {path} is corrupt (sha256 does not match SHA256SUMS); reinstall voxnode")
    return data


def checked_model_bytes(path: Path, owner: str) -> bytes:
    """check_model_file, read once per process: every interpreter of a model made per stream (Silero
    VAD) shares the bytes."""
    with _checked_lock:
        if path not in _checked:
            _checked[path] = check_model_file(path, owner)
        return _checked[path]


def read_manifest(root: Path) -> dict:
    if not root.is_dir():
        raise ModelError(f"model directory {root} does not exist")
    path = root / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelError(f"{path}: missing; {root} is not a converted model directory") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ModelError(f"{path}: unreadable manifest ({e})") from None
    if (
        not isinstance(manifest, dict)
        or not isinstance(manifest.get("files"), dict)
        or not isinstance(manifest.get("variants"), dict)
    ):
        raise ModelError(f"{path}: not a voxnode model manifest (no files/variants)")
    return manifest


def check_file(root: Path, name: str, entry: dict) -> Path:
    path = root / name
    if not path.is_file():
        raise ModelError(f"{path}: missing model file")
    size = path.stat().st_size
    if size != entry.get("bytes", size):
        raise ModelError(f"{path}: corrupt model file: {size} bytes, manifest says {entry['bytes']}")
    actual = sha256_of(path)
    if actual != entry.get("sha256"):
        raise ModelError(
            f"{path}: corrupt model file: sha256 {actual[:12]}… does not match the manifest "
            f"({str(entry.get('sha256'))[:12]}…); reinstall the model"
        )
    return path


def open_model_dir(root: Path, variant: str | None = None) -> ModelFiles:
    """Check the files of `variant` (default: int8 if present) and return their paths."""
    root = Path(root)
    manifest = read_manifest(root)
    variants = manifest["variants"]
    if variant is None:
        variant = "int8" if "int8" in variants else next(iter(variants), "")
    if variant not in variants:
        raise ModelError(f"{root / MANIFEST}: no {variant!r} model variant (has: {', '.join(variants) or 'none'})")
    wanted = list(SHARED_FILES) + [variants[variant]["encoder"], variants[variant]["decoder"]]
    paths = {}
    for name in wanted:
        entry = manifest["files"].get(name)
        if entry is None:
            raise ModelError(f"{root / MANIFEST}: does not list {name}")
        paths[name] = check_file(root, name, entry)
    try:
        config = json.loads(paths["model_config.json"].read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ModelError(f"{paths['model_config.json']}: unreadable ({e})") from None
    return ModelFiles(
        root=root,
        name=manifest.get("model", root.name),
        variant=variant,
        encoder=paths[variants[variant]["encoder"]],
        decoder=paths[variants[variant]["decoder"]],
        vocabulary=paths["vocabulary.txt"],
        merges=paths["merges.npy"],
        encoder_positions=paths["encoder_positions.npy"],
        decoder_positions=paths["decoder_positions.npy"],
        config=config,
    )
