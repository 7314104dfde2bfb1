"""The board's model name, for Home Assistant's device `hw_version`.

Device-tree boards (Raspberry Pi, Jetson, most ARM SBCs) name themselves in
/proc/device-tree/model, NUL-terminated: "Raspberry Pi 5 Model B Rev 1.0".
Boards without a device tree (x86 PCs, most VMs) have no such file: no hw_version.
"""

from __future__ import annotations

from pathlib import Path

MODEL_FILE = "proc/device-tree/model"


def board_model(root: str | Path = "/") -> str | None:
    try:
        raw = (Path(root) / MODEL_FILE).read_bytes()
    except OSError:
        return None
    model = raw.split(b"\x00", 1)[0].decode("utf-8", errors="replace").strip()
    return model[:100] or None
