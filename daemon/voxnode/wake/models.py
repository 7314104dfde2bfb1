"""Which microWakeWord model a stream listens for: a shipped one by name, or a user's manifest.

The shipped models come inside the `pymicro-wakeword` wheel (Apache-2.0; aarch64 and x86_64
wheels), each a .tflite file with a JSON manifest beside it that gives the wake phrase, the
probability cutoff and the sliding-window size its author tuned. A user-supplied model uses the
same manifest format (microWakeWord's, as ESPHome reads it). Nothing is downloaded.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path

from voxnode.config.wake import SHIPPED_CUTOFFS, SHIPPED_MODELS, wake_specs
from voxnode.config.wording import key_value
from voxnode.errors import ConfigError
from voxnode.models.find import WAKE_MODELS, find_model
from voxnode.regular_file import check_regular_file, read_regular_file

# The shipped manifests are 377-416 bytes (pymicro-wakeword 2.x); a manifest 150 times that is not one.
MAX_MANIFEST_BYTES = 64 << 10
# The shipped models are 52-81 KB (pymicro-wakeword 2.5.0: hey_jarvis 52272 bytes, okay_nabu 80824);
# a microWakeWord model 50 times that is not one (a log, an image, a Whisper graph given by mistake).
MAX_MODEL_BYTES = 4 << 20

_lock = threading.Lock()
_cache: dict[Path, bytes] = {}


@dataclass(frozen=True)
class WakeModel:
    name: str  # what events call it: the shipped name or the manifest's file stem ("okay_nabu")
    phrase: str  # what is said ("Okay Nabu")
    tflite: Path
    cutoff: float  # the averaged probability must exceed this
    window: int  # probabilities averaged (one per model call, 30 ms each for the shipped models)
    languages: tuple[str, ...]
    manifest_cutoff: float = 0.0  # what the model's author tuned (the manifest), for reports
    # The setting that asked for it (`streams[1].wake = "/etc/voxnode/hey.json"`): it opens the messages
    # of a model file that cannot be read or loaded when a stream starts (it said "wake.model:" alone,
    # for a stream's own `wake` too, and "reinstall voxnode" for a user's model).
    setting: str = field(default="wake.model", compare=False)
    shipped: bool = field(default=True, compare=False)  # one of pymicro-wakeword's (SHIPPED_MODELS)

    def content(self) -> bytes:
        """The model file's bytes, read once per process and shared by every stream's interpreter."""
        with _lock:
            if self.tflite not in _cache:
                what = f"{self.setting}: the model file {self.tflite}"
                _cache[self.tflite] = read_regular_file(self.tflite, what, MAX_MODEL_BYTES)
            return _cache[self.tflite]

    @property
    def advice(self) -> str:
        """What to do about a model file that does not load."""
        return "reinstall pymicro-wakeword" if self.shipped else "is it a microWakeWord model?"


def load_wake_model(spec: str, threshold: float = 0.0, key: str = "wake.model") -> WakeModel:
    """`spec`: a shipped model's name or the path of a manifest (.json; a .tflite with a .json beside it
    works too). The cutoff: `threshold` where > 0, else voxnode's for a shipped model (SHIPPED_CUTOFFS,
    chosen on real voices), else the manifest's. Errors name `key`."""
    setting = key_value(key, spec)  # how every message here opens: wake.model = "alexa"
    if spec in SHIPPED_MODELS:
        manifest = find_model(WAKE_MODELS, setting) / f"{spec}.json"
    else:
        path = Path(spec)
        if not (path.suffix in (".json", ".tflite") or path.is_absolute() or "/" in spec):
            raise ConfigError(
                f"{setting}: not a shipped model ({', '.join(SHIPPED_MODELS)}) nor a path to a model's JSON manifest"
            )
        manifest = path.with_suffix(".json")
    # Never waits on a FIFO (check-config and run hung there) nor reads a log given in its place.
    raw = read_regular_file(manifest, f"{setting}: manifest {manifest}", MAX_MANIFEST_BYTES)
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ConfigError(f"{setting}: cannot read the manifest {manifest}: {e}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{setting}: {manifest} is not a microWakeWord manifest (not a JSON object)")
    languages = data.get("trained_languages", [])
    if not (isinstance(languages, list) and all(isinstance(x, str) for x in languages)):
        raise ConfigError(f"{setting}: {manifest}: trained_languages must be a list of language codes")
    try:
        micro = data["micro"]
        tflite = manifest.parent / data["model"]
        cutoff = float(micro["probability_cutoff"])
        window = int(micro["sliding_window_size"])
        phrase = str(data["wake_word"])
    except (KeyError, TypeError, ValueError) as e:
        raise ConfigError(
            f"{setting}: {manifest} is not a microWakeWord manifest (missing or bad {e}); it needs "
            '"wake_word", "model" and "micro": {"probability_cutoff", "sliding_window_size"}'
        ) from None
    if data.get("type", "micro") != "micro":
        raise ConfigError(f"{setting}: {manifest} is a {data.get('type')!r} model; only microWakeWord works")
    check_regular_file(tflite, f"{setting}: the model file {tflite} named by {manifest}")
    if not 0.0 < cutoff < 1.0 or not 1 <= window <= 100:
        raise ConfigError(f"{setting}: {manifest}: probability_cutoff or sliding_window_size out of range")
    return WakeModel(
        name=spec if spec in SHIPPED_MODELS else manifest.stem,
        phrase=phrase,
        tflite=tflite,
        cutoff=threshold or (SHIPPED_CUTOFFS.get(spec, cutoff) if spec in SHIPPED_MODELS else cutoff),
        window=window,
        languages=tuple(languages),
        manifest_cutoff=cutoff,
        setting=setting,
        shipped=spec in SHIPPED_MODELS,
    )


def load_wake_models(spec: str, threshold: float = 0.0, key: str = "wake.model") -> tuple[WakeModel, ...]:
    """Every model `spec` names (comma-separated for several), each loaded and checked as
    load_wake_model does; errors name `key` and the model."""
    models = tuple(load_wake_model(one, threshold, key) for one in wake_specs(spec))
    names = [m.name for m in models]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(f"{key_value(key, spec)}: names {', '.join(twice)} more than once")
    return models
