"""TOML file -> validated Config, with errors that name the file, the key and what is allowed."""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
import tomllib
import types
import typing
from pathlib import Path
from typing import Any

from voxnode.config.fields import InvalidValue
from voxnode.config.root import Config
from voxnode.config.wording import BUILT_IN, tables_with, toml_value
from voxnode.errors import ConfigError
from voxnode.regular_file import read_regular_file

DEFAULT_PATH = Path("/etc/voxnode/config.toml")
# The reference file with every key is about 12 KB; a megabyte is a mistake (a log or a device given as
# --config), and reading it whole must not cost the node its memory.
MAX_CONFIG_BYTES = 1 << 20
# Our deepest legitimate nesting is [[streams]] (2 brackets) or an array value (1); tomllib recurses per
# level and raises RecursionError (a traceback) at about 330 levels, so deeper input is refused first.
MAX_TOML_DEPTH = 16
BOM = "\ufeff"


def load_config(path: str | Path | None = None) -> Config:
    """Load the config file.

    `path=None` means the default location, where a missing file means built-in
    defaults; an explicitly given path must exist.
    """
    if path is None:
        if not DEFAULT_PATH.exists():
            return Config(source=describe_source(None))
        path = DEFAULT_PATH
    path = Path(path)
    # Never waits on a FIFO (issue 27) and reads at most MAX_CONFIG_BYTES: voxnode.regular_file.
    raw = read_regular_file(path, f"config file {path}", MAX_CONFIG_BYTES)
    return parse_config(raw, str(path))


def parse_config(raw: bytes | str, source: str = "<config>") -> Config:
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            line = raw.count(b"\n", 0, e.start) + 1
            raise ConfigError(
                f"{source}: line {line}: not UTF-8 text (byte {e.start}); save the file as UTF-8"
            ) from None
    else:
        text = raw
    # Windows editors (Notepad) start UTF-8 files with a byte order mark; TOML has no use for it.
    text = text.removeprefix(BOM)
    depth, line = toml_nesting(text)
    if depth > MAX_TOML_DEPTH:
        raise ConfigError(
            f"{source}: line {line}: arrays or inline tables nested {depth} levels deep; the limit is {MAX_TOML_DEPTH}"
        )
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{source}: TOML syntax error: {e}") from None
    except RecursionError:  # toml_nesting should have caught it; never a traceback
        raise ConfigError(f"{source}: nested too deeply to read") from None
    config: Config = build(Config, move_former_keys(data, source), "", source)
    return dataclasses.replace(config, source=source)


def describe_source(path: str | Path | None) -> str:
    """The config `load_config(path)` reads, as messages name it: the file, or the built-in defaults
    and the file that is not there."""
    if path is None and not DEFAULT_PATH.exists():
        return f"{BUILT_IN} (there is no {DEFAULT_PATH})"
    return str(DEFAULT_PATH if path is None else path)


def move_former_keys(data: dict[str, Any], source: str) -> dict[str, Any]:
    """Keys that moved to another section (`formerly=` in their setting: [mqtt] spool_path is now
    [delivery] spool_path) are still accepted in their old place; setting both is an error."""
    hints = typing.get_type_hints(Config)
    for f in dataclasses.fields(Config):
        if not f.metadata.get("section"):
            continue
        for sub in dataclasses.fields(hints[f.name]):
            old = sub.metadata.get("formerly")
            if not old:
                continue
            old_section, old_key = old.split(".")
            old_table, new_table = data.get(old_section), data.get(f.name, {})
            if not (isinstance(old_table, dict) and old_key in old_table and isinstance(new_table, dict)):
                continue
            new = f"{f.name}.{sub.name}"
            if sub.name in new_table:
                raise ConfigError(f"{source}: {old} and {new} are one setting ({old} is its old name): set {new} only")
            data = {**data, old_section: {k: v for k, v in old_table.items() if k != old_key}}
            data[f.name] = {**new_table, sub.name: old_table[old_key]}
    return data


def toml_nesting(text: str) -> tuple[int, int]:
    """(deepest [ / { nesting, its line) outside strings and comments: a cheap pre-check before tomllib."""
    depth = deepest = 0
    deepest_line = line = 1
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
        elif c == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        elif c in "\"'":
            i, line = _skip_string(text, i, line)
            continue
        elif c in "[{":
            depth += 1
            if depth > deepest:
                deepest, deepest_line = depth, line
        elif c in "]}":
            depth = max(0, depth - 1)
        i += 1
    return deepest, deepest_line


def _skip_string(text: str, i: int, line: int) -> tuple[int, int]:
    """Index just past the string starting at text[i] (basic, literal, multi-line), and the line there."""
    quote = text[i]
    delim = quote * 3 if text.startswith(quote * 3, i) else quote
    j = i + len(delim)
    n = len(text)
    while j < n:
        c = text[j]
        if c == "\\" and quote == '"':
            if j + 1 < n and text[j + 1] == "\n":
                line += 1
            j += 2
            continue
        if c == "\n":
            line += 1
            if len(delim) == 1:
                return j, line - 1  # an unterminated one-line string: tomllib reports it
        if text.startswith(delim, j):
            j += len(delim)
            # A multi-line string may end with up to two extra quotes: five quotes close 'a' as 'a""'.
            extra = 0
            while len(delim) == 3 and extra < 2 and j < n and text[j] == quote:
                j += 1
                extra += 1
            return j, line
        j += 1
    return n, line


def build(cls: type, data: dict[str, Any], prefix: str, source: str) -> Any:
    """Build one dataclass from a TOML table, checking every key."""
    hints = typing.get_type_hints(cls)
    known = {f.name: f for f in dataclasses.fields(cls) if not f.metadata.get("not_a_key")}
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
            value = getattr(obj, e.key, None) if e.value is None else e.value
            shown = f" = {toml_value(value)}" if value is not None and not isinstance(value, tuple) else ""
            if known.get(e.key) is not None and known[e.key].metadata.get("secret"):
                shown = ""  # never echo a password, even a misplaced one
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
        if meta.get("secret"):  # a password typed as a number is still a password
            return ConfigError(f"{source}: {key}: {why}")
        return ConfigError(f"{source}: {key} = {toml_value(given)}: {why}")

    for old, new in meta.get("aliases") or ():
        if type(value) is type(old) and value == old:
            value = new  # a value older configs used (e.g. frontend.denoise = true)
            break
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
        if not math.isfinite(value):
            # nan compares false with every bound, so it would slip past min/max and disable a check
            raise fail("expected a finite number (not nan or inf)")
    elif hint is str:
        if not isinstance(value, str):
            raise fail("expected a string")
        if "\x00" in value:
            # TOML allows "\u0000"; no name, path or text here can hold one (C strings end there, and
            # a device name with one killed the capture thread with a ValueError: issue 27).
            raise fail("must not contain a NUL character")
    lo, hi = meta.get("min"), meta.get("max")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise fail(f"must be between {toml_value(lo)} and {toml_value(hi)}")
    choices = meta.get("choices")
    if choices is not None and value not in choices:
        raise fail("allowed values are " + ", ".join(toml_value(c) for c in choices))
    pattern = meta.get("pattern")
    if pattern is not None and value != "" and not re.fullmatch(pattern, value):
        raise fail(f"must match {pattern}")
    return value


def _unknown_key_message(source: str, prefix: str, key: str, known: dict) -> str:
    where = f"[{prefix}]" if prefix else "the top level"
    msg = f"{source}: unknown key {_join(prefix, key)!r} in {where}"
    # A key of another section (its [header] missing, or under the wrong one) is named there: a
    # `device` at the top level was asked "did you mean 'service'?".
    homes = [h for h in tables_with(key) if h.strip("[]") != prefix.split("[")[0]]
    if homes:
        return msg + "; it is a key of " + " and ".join(homes)
    close = difflib.get_close_matches(key, list(known), n=1)
    if close:
        msg += f" (did you mean {close[0]!r}?)"
    else:
        msg += "; known keys: " + ", ".join(known)
    return msg


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


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
