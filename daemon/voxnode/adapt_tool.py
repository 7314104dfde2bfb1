"""`voxnode adapt`: runs the build-time fine-tuning tool (scripts/adapt/, `python -m scripts.adapt`) in its own venv.

The runtime never imports the tool (TensorFlow is build-time only): this only finds the checkout's
scripts/adapt/ and the venv `make adapt-venv` builds, and runs one with the other: as a module of the
checkout (the checkout on PYTHONPATH, so that paths given on the command line stay relative to the
caller's folder).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from voxnode.errors import VoxnodeError

ADAPT_VENV = ".venv-adapt"
# What `make adapt-venv` installs, for the error message (measured: `du -sh .venv-adapt`).
ADAPT_VENV_SIZE = "about 1.7 GB: tensorflow-cpu"


def checkout_root() -> Path:
    return Path(__file__).resolve().parents[2]  # daemon/voxnode/adapt_tool.py -> the checkout


def tool_command(argv: list[str], root: Path | None = None) -> list[str]:
    """The command that runs the tool (from anywhere with tool_env), or a one-line VoxnodeError naming
    what to install."""
    root = root or checkout_root()
    script = root / "scripts" / "adapt" / "__main__.py"
    if not script.is_file():
        raise VoxnodeError(
            f"voxnode adapt: {script} not found; it runs from a voxnode source checkout (git clone), "
            "on a PC or a Pi 5 (docs/adapt.md)"
        )
    python = Path(os.environ.get("VOXNODE_ADAPT_PYTHON") or root / ADAPT_VENV / "bin" / "python")
    if not python.is_file():
        raise VoxnodeError(
            f"voxnode adapt: its build-time venv {python.parent.parent} is missing: run `make adapt-venv` in {root} "
            f"({ADAPT_VENV_SIZE})"
        )
    return [str(python), "-m", "scripts.adapt", *argv]


def tool_env(root: Path | None = None) -> dict[str, str]:
    """The environment the tool runs in: the checkout importable (scripts.adapt, scripts.convert, ...)."""
    root = root or checkout_root()
    path = os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path}


def run(argv: list[str]) -> int:
    return subprocess.call(tool_command(argv), env=tool_env())
