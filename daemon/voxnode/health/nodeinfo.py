"""What a node runs on and what it runs: board, OS, kernel, model and config checksums.

For fleets: the MQTT status message and Prometheus' `voxnode_node_info` carry these, so an
operator sees which nodes run which board, OS, model and config. `root` lets tests use a fake
/proc, /sys and /etc.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import platform
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from voxnode import __version__
from voxnode.asr.backends import recognizer_class
from voxnode.config.render import render_effective
from voxnode.errors import VoxnodeError
from voxnode.models.files import MAX_LIST_BYTES
from voxnode.regular_file import read_head_if_any, read_regular_file

if TYPE_CHECKING:
    from voxnode.config import Config
    from voxnode.config.asr import AsrConfig

# Device-tree boards (Raspberry Pi, Jetson, most ARM boards) name themselves here, NUL-terminated:
# "Raspberry Pi 5 Model B Rev 1.0". PCs and most VMs have no device tree but DMI.
DEVICE_TREE_MODEL = "proc/device-tree/model"
DMI_PRODUCT = "sys/class/dmi/id/product_name"
OS_RELEASE = ("etc/os-release", "usr/lib/os-release")
MAX_TEXT = 100
# What is read of each (the read is capped: /proc and /sys files have no size to check): a board name
# is one short line ("Raspberry Pi 4 Model B Rev 1.5" and its NUL, 31 bytes; a sysfs file gives at
# most one page), Debian 12's os-release 267 bytes with PRETTY_NAME on its first line.
HEAD_BYTES = 4096
OS_RELEASE_BYTES = 16 << 10

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class NodeInfo:
    board: str | None
    os: str | None
    kernel: str
    arch: str
    python: str
    version: str
    model_sha256: str | None  # sha256 of the model's manifest.json, which lists every model file's sha256
    config_sha256: str  # sha256 of `voxnode check-config` output (the effective config, secrets masked)

    def as_dict(self) -> dict:
        return asdict(self)


def _head(path: Path, what: str, n: int) -> bytes | None:
    """The first `n` bytes of `path`; None where it is missing or is no file to read (a FIFO, a device:
    never waited on, nor read without end), which is logged in one line naming it."""
    try:
        return read_head_if_any(path, f"{what} {path}", n, VoxnodeError)
    except VoxnodeError as e:
        log.warning("node info: %s", e)
        return None


def _first_line(path: Path) -> str | None:
    raw = _head(path, "board name file", HEAD_BYTES)
    if raw is None:
        return None
    text = raw.split(b"\x00", 1)[0].decode("utf-8", errors="replace").strip()
    return text.splitlines()[0][:MAX_TEXT] if text else None


def board_model(root: str | Path = "/") -> str | None:
    root = Path(root)
    return _first_line(root / DEVICE_TREE_MODEL) or _first_line(root / DMI_PRODUCT)


def os_name(root: str | Path = "/") -> str | None:
    for name in OS_RELEASE:
        raw = _head(Path(root) / name, "OS release file", OS_RELEASE_BYTES)
        if raw is None:
            continue
        for line in raw.decode("utf-8", errors="replace").splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip("\"'")[:MAX_TEXT] or None
    return None


@functools.lru_cache(maxsize=8)
def _file_sha256(path: Path, mtime_ns: int, size: int) -> str:
    # The engine refuses a manifest that is a FIFO or too large before any status is sent; this only
    # must not wait on one nor read it whole.
    return hashlib.sha256(read_regular_file(path, f"model file {path}", MAX_LIST_BYTES, VoxnodeError)).hexdigest()


def model_sha256(asr: AsrConfig) -> str | None:
    """The checksum of the file that identifies the model's files (Whisper: its manifest, which lists
    every file's sha256); None where there is no model or the engine names no such file."""
    try:
        path = recognizer_class(asr.engine).model_id_file(asr)
        if path is None:
            return None
        st = path.stat()
        return _file_sha256(path, st.st_mtime_ns, st.st_size)
    except (VoxnodeError, OSError):
        return None


@functools.lru_cache(maxsize=4)
def config_sha256(config: Config) -> str:
    return hashlib.sha256(render_effective(config).encode()).hexdigest()


@functools.lru_cache(maxsize=1)
def _platform(root: str) -> tuple[str | None, str | None, str, str, str]:
    u = os.uname()
    return board_model(root), os_name(root), u.release, u.machine, platform.python_version()


def node_info(config: Config, root: str = "/") -> NodeInfo:
    board, os_pretty, kernel, arch, python = _platform(root)
    return NodeInfo(
        board=board,
        os=os_pretty,
        kernel=kernel,
        arch=arch,
        python=python,
        version=__version__,
        model_sha256=model_sha256(config.asr),
        config_sha256=config_sha256(config),
    )
