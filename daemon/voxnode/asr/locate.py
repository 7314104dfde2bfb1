"""Where the converted model lives when the config does not say."""

from __future__ import annotations

from pathlib import Path

from voxnode.errors import ModelError

MODEL_NAME = "whisper-tiny.en"
SYSTEM_DIRS = (Path("/opt/voxnode/models"), Path("/usr/share/voxnode/models"))


def candidate_dirs() -> list[Path]:
    # daemon/voxnode/asr/locate.py -> the checkout (or editable install) root holds models/.
    source_root = Path(__file__).resolve().parents[3]
    return [source_root / "models" / MODEL_NAME] + [d / MODEL_NAME for d in SYSTEM_DIRS]


def default_model_dir(configured: str | Path | None = None) -> Path:
    """`asr.model_dir` if set, else the first of the known places that holds a model."""
    if configured:
        return Path(configured).expanduser()
    candidates = candidate_dirs()
    for d in candidates:
        if (d / "manifest.json").is_file():
            return d
    raise ModelError(
        "no speech model found; looked in "
        + ", ".join(str(d) for d in candidates)
        + " (set asr.model_dir in the config)"
    )
