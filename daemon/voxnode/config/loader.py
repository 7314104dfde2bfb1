"""TOML file -> validated Config, with errors that name the file, the key and what is allowed."""

from __future__ import annotations

import dataclasses
import difflib
import re
import tomllib
import types
import typing
from pathlib import Path
from typing import Any

from voxnode.config.fields import InvalidValue
from voxnode.config.root import Config
from voxnode.errors import ConfigError

DEFAULT_PATH = Path("/etc/voxnode/config.toml")


def load_config(path: str | Path | None = None) -> Config:
    """Load the config file.

    `path=None` means the default location, where a missing file means built-in
    defaults; an explicitly given path must exist.
    """
    if path is None:
        if not DEFAULT_PATH.exists():
            return Config()
        path = DEFAULT_PATH
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except IsADirectoryError:
        raise ConfigError(f"config file {path} is a directory") from None
    except PermissionError:
        raise ConfigError(f"config file {path} is not readable (permission denied)") from None
    return parse_config(raw, str(path))


def parse_config(raw: bytes | str, source: str = "<config>") -> Config:
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ConfigError(f"{source}: not UTF-8 text (byte {e.start})") from None
    try:
        data = tomllib.loads(raw)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{source}: TOML syntax error: {e}") from None
    return build(Config, data, "", source)


def build(cls: type, data: dict[str, Any], prefix: str, source: str) -> Any:
    """Build one dataclass from a TOML table, checking every key."""
    hints = typing.get_type_hints(cls)
    known = {f.name: f for f in dataclasses.fields(cls)}
    for key in data:
        if key not in known:
            raise ConfigError(_unknown_key_message(source, prefix, key, known))
    kwargs: dict[str, Any] = {}
    for name, f in known.items():
        if name not in data:
            continue
        kwargs[name] = _convert(hints[name], f, data[name], _join(prefix, name), source)
    obj = cls(**kwargs)
    check = getattr(obj, "check", None)
    if check is not None:
        try:
            check()
        except InvalidValue as e:
            key = _join(prefix, e.key)
            value = getattr(obj, e.key, None)
            shown = f" = {_show(value)}" if value is not None and not isinstance(value, tuple) else ""
            raise ConfigError(f"{source}: {key}{shown}: {e.message}") from None
    return obj


def _convert(hint: Any, f: dataclasses.Field, value: Any, key: str, source: str) -> Any:
    meta = f.metadata
    if meta.get("section"):
        if not isinstance(value, dict):
            raise ConfigError(f"{source}: {key} must be a table ([{key}]), not {_type_name(value)}")
        return build(hint, value, key, source)
    if meta.get("table_list"):
        item_cls = meta["table_list"]
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise ConfigError(f"{source}: {key} must be an array of tables ([[{key}]]), not {_type_name(value)}")
        return tuple(build(item_cls, v, f"{key}[{i}]", source) for i, v in enumerate(value))
    return _check_scalar(hint, meta, value, key, source)


def _check_scalar(hint: Any, meta: Any, value: Any, key: str, source: str) -> Any:
    given = value

    def fail(why: str) -> ConfigError:
        return ConfigError(f"{source}: {key} = {_show(given)}: {why}")

    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
        origin = typing.get_origin(hint)
    if origin is tuple:
        item = typing.get_args(hint)[0]
        if not isinstance(value, list):
            raise fail(f"expected a list of {_hint_name(item)}")
        return tuple(_check_scalar(item, meta, v, f"{key}[{i}]", source) for i, v in enumerate(value))
    if hint is bool:
        if not isinstance(value, bool):
            raise fail("expected true or false")
    elif hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise fail("expected an integer")
    elif hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise fail("expected a number")
        value = float(value)
    elif hint is str and not isinstance(value, str):
        raise fail("expected a string")
    lo, hi = meta.get("min"), meta.get("max")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise fail(f"must be between {_show(lo)} and {_show(hi)}")
    choices = meta.get("choices")
    if choices is not None and value not in choices:
        raise fail("allowed values are " + ", ".join(_show(c) for c in choices))
    pattern = meta.get("pattern")
    if pattern is not None and value != "" and not re.fullmatch(pattern, value):
        raise fail(f"must match {pattern}")
    return value


def _unknown_key_message(source: str, prefix: str, key: str, known: dict) -> str:
    where = f"[{prefix}]" if prefix else "the top level"
    msg = f"{source}: unknown key {_join(prefix, key)!r} in {where}"
    close = difflib.get_close_matches(key, list(known), n=1)
    if close:
        msg += f" (did you mean {close[0]!r}?)"
    else:
        msg += "; known keys: " + ", ".join(known)
    return msg


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, dict):
        return "{table}"
    if isinstance(value, list):
        return "[...]"
    return repr(value)


def _type_name(value: Any) -> str:
    names = {
        dict: "a table",
        list: "an array",
        str: "a string",
        bool: "a boolean",
        int: "an integer",
        float: "a number",
    }
    return names.get(type(value), type(value).__name__)


def _hint_name(hint: Any) -> str:
    return {int: "integers", float: "numbers", str: "strings", bool: "booleans"}.get(hint, str(hint))
