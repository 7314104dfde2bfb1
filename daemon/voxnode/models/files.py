"""Checking a model's files before use, so that a truncated copy or a bad SD card sector gives a
ModelError naming the file, not garbage output or a crash inside the interpreter.

Two forms: a small model with a SHA256SUMS file beside it (Silero VAD, the end-of-turn model, DeepFilterNet 3), and
a folder whose manifest.json lists every file with its size and sha256 (Whisper; the
manifest's layout of variants is read by asr/whisper/files.py).
"""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path

from voxnode.errors import ModelError
from voxnode.regular_file import check_regular_file, read_regular_file, read_regular_file_if_any

MANIFEST = "manifest.json"
# The small models read whole into memory: Silero VAD v6 1264488 bytes, Smart Turn v3.2 8725952 bytes,
# DeepFilterNet 3's graphs 1950472 / 3300260 / 3340028 bytes.
# A file 4 times the larger is not one of them (a log, a Whisper graph, /dev/zero behind a link).
MAX_SMALL_MODEL_BYTES = 32 << 20
# The SHA256SUMS beside them are 158-238 bytes, Whisper's 828; the manifests 1434-1436 bytes.
MAX_LIST_BYTES = 64 << 10


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


_checked_lock = threading.Lock()
_checked: dict[Path, bytes] = {}


def check_model_file(path: Path, owner: str) -> bytes:
    """A small model file, read and checked against the SHA256SUMS beside it; returns its bytes.
    `owner` (the config setting that loads it) opens every error message."""
    # Never waits on a FIFO nor reads an endless file given in its place (voxnode.regular_file).
    try:
        data = read_regular_file(path, f"{owner}: the model {path}", MAX_SMALL_MODEL_BYTES, ModelError)
        sums = path.parent / "SHA256SUMS"
        raw = read_regular_file_if_any(sums, f"{owner}: {sums}", MAX_LIST_BYTES, ModelError)
    except ModelError as e:
        raise ModelError(f"{e}; reinstall voxnode") from None
    lines = raw.decode("utf-8", errors="replace").splitlines() if raw is not None else []
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
        raise ModelError(f"model directory {root} {'is not a directory' if root.exists() else 'does not exist'}")
    path = root / MANIFEST
    raw = read_regular_file_if_any(path, f"{path}:", MAX_LIST_BYTES, ModelError)
    if raw is None:
        raise ModelError(f"{path}: missing; {root} is not a converted model directory")
    try:
        manifest = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ModelError(f"{path}: unreadable manifest ({e})") from None
    if (
        not isinstance(manifest, dict)
        or not isinstance(manifest.get("files"), dict)
        or not isinstance(manifest.get("variants"), dict)
    ):
        raise ModelError(f"{path}: not a voxnode model manifest (no files/variants)")
    return manifest


def check_file(root: Path, name: str, entry: dict) -> Path:
    """`root`/`name` against its manifest entry (bytes, sha256)."""
    path = root / name
    check_regular_file(path, f"{path}: the model file", ModelError)  # a FIFO: named as one, not waited on
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
