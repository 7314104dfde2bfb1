"""Whisper's model directory: where it is (`default_model_dir`), its manifest's variants, and the
checked paths of one variant.

Every file the engine reads is checked against manifest.json before use (models/files.py) so
that a truncated copy or a bad SD card sector gives a ModelError naming the file, not garbage
transcripts or a crash inside the interpreter.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from voxnode.config.asr import AsrConfig
from voxnode.config.wording import toml_value
from voxnode.errors import ModelError
from voxnode.models.files import MANIFEST, check_file, read_manifest
from voxnode.models.find import WHISPER_PREFIX, find_model, is_path

DEFAULT_MODEL = "tiny.en"  # [asr] model
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


def model_dir_name(model: str) -> str:
    """`[asr] model` ("tiny.en", "base", "tiny.en+kitchen") -> its folder name under models/; a path as is."""
    return model if is_path(model) else f"{WHISPER_PREFIX}{model}"


def default_model_dir(configured: str | Path | None = None, model: str = DEFAULT_MODEL) -> Path:
    """`asr.model_dir` if set, else the folder of `asr.model` (models/find.py says where it looks)."""
    if configured:
        return Path(configured).expanduser()
    return find_model(model_dir_name(model), f"asr.model = {toml_value(model)}")


def model_setting(config: AsrConfig) -> tuple[str, str]:
    """The setting that names the model's folder, and its value: asr.model_dir where set, else asr.model."""
    return ("asr.model_dir", config.model_dir) if config.model_dir else ("asr.model", config.model)


def checked_model_dir(configured: str, model: str = DEFAULT_MODEL) -> Path:
    """default_model_dir for loading: a set `asr.model_dir` that is not a folder is a ModelError naming the key."""
    root = default_model_dir(configured, model)
    if configured and not root.is_dir():
        why = "is not a folder" if root.exists() else "does not exist"
        raise ModelError(f"asr.model_dir = {toml_value(configured)}: {root} {why}")
    return root


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
    check_model_config(paths["model_config.json"], config)
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


# What the engine reads of model_config.json (load.py, decoder.py, search.py, engine.py). A user's
# folder whose file lacked one, or had a list or 0 in its place, gave a KeyError, TypeError or
# ZeroDivisionError traceback at load.
CONFIG_COUNTS = ("n_mels", "d_model", "n_heads", "n_audio_ctx", "n_text_ctx", "n_decoder_layers", "vocab_size")
CONFIG_TOKENS = ("eot", "sot", "no_speech", "no_timestamps")
CONFIG_ID_LISTS = ("suppress_ids", "suppress_ids_begin")


def check_model_config(path: Path, config: object) -> None:
    """A ModelError naming `path` and the entries unless `config` has every entry the engine reads."""

    def whole(value: object, least: int) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and value >= least

    if not isinstance(config, dict):
        raise ModelError(f"{path}: not a model configuration (a JSON object)")
    bad = [k for k in CONFIG_COUNTS if not whole(config.get(k), 1)]
    tokens = config.get("tokens")
    bad += [f"tokens.{t}" for t in CONFIG_TOKENS if not isinstance(tokens, dict) or not whole(tokens.get(t), 0)]
    if config.get("multilingual") and not whole(config.get("transcribe"), 0):
        bad.append("transcribe")
    bad += [
        f"{k} (a list of token ids)"
        for k in CONFIG_ID_LISTS
        if not isinstance(config.get(k), list) or not all(whole(i, 0) for i in config[k])
    ]
    if bad:
        raise ModelError(f"{path}: missing, or not a positive whole number: {', '.join(bad)}")
    if config["d_model"] % config["n_heads"]:
        raise ModelError(f"{path}: d_model {config['d_model']} is not a multiple of n_heads {config['n_heads']}")
