"""`--set section.key=value` of the benchmarks (stream.py, eval_noise_only.py, live_noise.py): one parser,
and voxnode's config loader as the judge, before anything is built or loaded.

A value is TOML (`vad.engine="spectral"`, `vad.hangover_ms=700`, `asr.hotwords=["Voxnode"]`); a bare word
is a string (`vad.engine=spectral`). An unknown key or a bad value stops the tool with the loader's one
line, naming the key (before: stream.py and eval_noise_only.py each parsed their own way and stopped with
a TypeError, AttributeError or ValueError traceback after loading Whisper, and eval_noise_only.py read a
bool key's `1` as false; live_noise.py's daemons refused the config only once its audio had been built).
"""

from __future__ import annotations

import dataclasses
import json
import tomllib

from voxnode.config import Config, parse_config
from voxnode.errors import ConfigError

SOURCE = "--set"  # what the loader's messages name as the file


def parse_sets(items: list[str]) -> dict[str, dict]:
    """["vad.engine=spectral", "vad.hangover_ms=700"] -> {"vad": {"engine": "spectral", "hangover_ms": 700}},
    checked by the config loader (SystemExit with its one line)."""
    sets: dict[str, dict] = {}
    for item in items:
        key, sep, val = item.partition("=")
        section, dot, name = key.strip().partition(".")
        if not sep or not dot or not section or not name:
            raise SystemExit(f"--set {item!r}: expected section.key=value")
        try:
            value = tomllib.loads(f"v = {val}")["v"]
        except tomllib.TOMLDecodeError:
            value = val
        sets.setdefault(section, {})[name.strip()] = value
    _checked(sets)
    return sets


def apply_sets(config: Config, sets: dict[str, dict]) -> Config:
    """`config` with the sections of `sets` changed, each value as the loader reads it (a list as a
    tuple, an int for a float key as a float)."""
    loaded = _checked(sets)
    for section, values in sets.items():
        new = {k: getattr(getattr(loaded, section), k) for k in values}
        config = dataclasses.replace(config, **{section: dataclasses.replace(getattr(config, section), **new)})
    return config


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return repr(value)  # int, float (nan and inf too: the loader names the key)


def _checked(sets: dict[str, dict]) -> Config:
    text = "".join(
        f"[{section}]\n" + "".join(f"{k} = {_toml(v)}\n" for k, v in values.items()) for section, values in sets.items()
    )
    try:
        return parse_config(text, SOURCE)
    except ConfigError as e:
        raise SystemExit(str(e)) from None
