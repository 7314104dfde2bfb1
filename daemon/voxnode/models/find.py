"""`find_model(name)`: the folder of a model, by name, for every model voxnode loads.

A name is a model's folder name. It is looked for, in this order, in `models/` of the checkout (a
development tree or an editable install), /opt/voxnode/models (where scripts/install.sh puts the
converted models), /usr/share/voxnode/models (a distribution package) and the models bundled in
the Python package (voxnode/models/bundled: the small ones every install has). The microWakeWord
models are the one exception: they come inside the pymicro-wakeword wheel.

A folder counts only if it holds the model's marker file (Whisper's manifest.json, the .tflite
of the others), so an empty or half-copied folder earlier in the list does not hide a good one.

Names beyond the shipped ones, so that a model added beside them needs no new lookup:
- "<shipped name>+<label>" (e.g. "whisper-tiny.en+kitchen"): a model derived from a shipped one
  (a fine-tuned Whisper), installed beside it; it has the shipped one's marker file;
- a path (absolute, "~/...", "./..." or with a "/"): that folder, used as it is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from voxnode.errors import ModelError

# daemon/voxnode/models/find.py -> the checkout (or editable install) root holds models/ beside
# pyproject.toml; an installed package (site-packages) has no such root.
_SOURCE_ROOT = Path(__file__).resolve().parents[3]
CHECKOUT_MODELS = _SOURCE_ROOT / "models"
IN_CHECKOUT = (_SOURCE_ROOT / "pyproject.toml").is_file()
SYSTEM_DIRS = (Path("/opt/voxnode/models"), Path("/usr/share/voxnode/models"))
BUNDLED = Path(__file__).resolve().parent / "bundled"

WHISPER_PREFIX = "whisper-"  # [asr] model = "tiny.en" -> the folder whisper-tiny.en
TURN_MODEL, TURN_MODEL_FILE = "smart-turn-v3.2", "smart_turn.tflite"  # vad.end_of_turn
TURN_SETTING = 'vad.end_of_turn = "smart-turn"'  # the setting that loads it, opening its errors
SILERO_MODEL, SILERO_MODEL_FILE = "silero-vad-v6", "silero_vad.tflite"
SILERO_SETTING = 'vad.engine = "silero"'
DEEPFILTER_MODEL, DEEPFILTER_GRAPHS = "deepfilternet3", ("enc", "erb_dec", "df_dec")
DEEPFILTER_SETTING = 'frontend.denoise_engine = "deepfilter"'
WAKE_MODELS = "microwakeword"  # the shipped wake-word models (wake.model)


def model_roots() -> list[Path]:
    """The folders that hold models, in the order they are searched (only real places: an error
    message lists them)."""
    return [*([CHECKOUT_MODELS] if IN_CHECKOUT else []), *SYSTEM_DIRS, BUNDLED]


def _wake_roots() -> list[Path]:
    try:
        import pymicro_wakeword
    except ImportError:
        raise ModelError(
            "wake words need the pymicro-wakeword package (it ships the models): pip install pymicro-wakeword"
        ) from None
    return [Path(pymicro_wakeword.__file__).resolve().parent]


@dataclass(frozen=True)
class Shipped:
    """A model voxnode ships: the file that proves a folder holds it, what to do when none does."""

    marker: str
    what: str  # "speech model": in "no speech model found"
    remedy: str
    roots: Callable[[], list[Path]] | None = None  # None: model_roots()
    folder: str = ""  # the folder's name under a root when it is not the model's name


SHIPPED: dict[str, Shipped] = {
    f"{WHISPER_PREFIX}tiny.en": Shipped("manifest.json", "speech model", "set asr.model_dir in the config"),
    f"{WHISPER_PREFIX}base": Shipped("manifest.json", "speech model", "set asr.model_dir in the config"),
    TURN_MODEL: Shipped(
        TURN_MODEL_FILE, "end-of-turn model", 'reinstall voxnode, or set vad.end_of_turn = "off"'
    ),
    SILERO_MODEL: Shipped(SILERO_MODEL_FILE, "Silero VAD model", "reinstall voxnode"),
    DEEPFILTER_MODEL: Shipped(
        f"{DEEPFILTER_GRAPHS[0]}.tflite", "DeepFilterNet 3 model", "reinstall voxnode, or choose another denoise_engine"
    ),
    WAKE_MODELS: Shipped(
        "okay_nabu.json", "wake-word models", "reinstall pymicro-wakeword", roots=_wake_roots, folder="models"
    ),
}


def is_path(name: str) -> bool:
    return name.startswith(("/", "~", ".")) or "/" in name


def shipped_of(name: str) -> Shipped | None:
    """The shipped model `name` is, or derives from ("whisper-tiny.en+kitchen" -> whisper-tiny.en)."""
    return SHIPPED.get(name.split("+", 1)[0])


def candidates(name: str) -> list[Path]:
    """Where `name` is looked for, in order."""
    if is_path(name):
        return [Path(name).expanduser()]
    shipped = shipped_of(name)
    if shipped is None or "+" in name:
        # A derived model is installed beside the shipped ones, never inside the Python package.
        return [root / name for root in model_roots() if root != BUNDLED]
    roots = shipped.roots() if shipped.roots else model_roots()
    return [root / (shipped.folder or name) for root in roots]


def find_model(name: str, setting: str) -> Path:
    """The folder of model `name` (a shipped model's name, a "<shipped>+<label>" variant or a path).
    `setting` (the config key that asks for it, with its value) opens every error message."""
    shipped = shipped_of(name)
    try:
        places = candidates(name)
    except ModelError as e:
        raise ModelError(f"{setting}: {e}") from None
    for d in places:
        if d.is_dir() and (shipped is None or (d / shipped.marker).is_file()):
            return d
    what = shipped.what if shipped else "model"
    remedy = shipped.remedy if shipped else "check the name or path"
    # absolute(): a relative path is the process's working folder's ("./m" said "looked in m"; under
    # systemd that folder is /).
    looked = ", ".join(str(d.absolute()) for d in places)
    raise ModelError(f"{setting}: no {what} found; looked in {looked} ({remedy})")
