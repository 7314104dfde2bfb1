"""Where the converted models live: Whisper's when the config does not say, and the end-of-turn
model's (`vad.end_of_turn`)."""

from __future__ import annotations

from pathlib import Path

from voxnode.errors import ModelError

MODEL_NAME = "whisper-tiny.en"  # [asr] model = "tiny.en", the default
TURN_MODEL_NAME = "smart-turn-v3.2"
TURN_MODEL_FILE = "smart_turn.tflite"
SYSTEM_DIRS = (Path("/opt/voxnode/models"), Path("/usr/share/voxnode/models"))


def candidate_dirs(name: str = MODEL_NAME) -> list[Path]:
    # daemon/voxnode/asr/locate.py -> the checkout (or editable install) root holds models/.
    source_root = Path(__file__).resolve().parents[3]
    return [source_root / "models" / name] + [d / name for d in SYSTEM_DIRS]


def turn_model_dir() -> Path:
    """The first of the known places that holds the end-of-turn model (scripts/install.sh puts it
    beside Whisper's in /opt/voxnode/models)."""
    candidates = candidate_dirs(TURN_MODEL_NAME)
    for d in candidates:
        if (d / TURN_MODEL_FILE).is_file():
            return d
    raise ModelError(
        "vad.end_of_turn: no end-of-turn model found; looked in "
        + ", ".join(str(d) for d in candidates)
        + ' (reinstall voxnode, or set vad.end_of_turn = "off")'
    )


def model_dir_name(model: str) -> str:
    """`[asr] model` ("tiny.en", "base") -> its folder name under models/."""
    return f"whisper-{model}"


def default_model_dir(configured: str | Path | None = None, model: str = "tiny.en") -> Path:
    """`asr.model_dir` if set, else the first of the known places that holds `asr.model`."""
    if configured:
        return Path(configured).expanduser()
    candidates = candidate_dirs(model_dir_name(model))
    for d in candidates:
        if (d / "manifest.json").is_file():
            return d
    raise ModelError(
        f"asr.model = {model!r}: no speech model found; looked in "
        + ", ".join(str(d) for d in candidates)
        + " (set asr.model_dir in the config)"
    )
