"""How every message about a setting is worded: `<config file>: <section.key> = <TOML value>: <what is
wrong>; <what to do>`.

The loader words its own messages so (it knows the file). The checks made beyond the file (the models,
the MQTT password and TLS files, the spool path, the wake words: voxnode.preflight, and the components
at start) say `<section.key> = <TOML value>: ...` with `key_value`, and `in_config` opens such a message
with the config file where the config is known: check-config, run's start, a reload.
"""

from __future__ import annotations

import dataclasses
import errno
import math
import re
import typing
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from voxnode.errors import VoxnodeError

# The source of a Config built without a file (Config(); the loader says which file it looked for).
BUILT_IN = "built-in defaults"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# A string value longer than this is shown by its start and its length: a 70000-character client_id
# made a 70 KB error line. Paths and names are far shorter.
SHOWN_CHARS = 200
# A message about a setting opens with its key: "asr.model_dir = ...", "streams[1].wake: ...",
# "vad.engine = ...". A message that opens with something else (a path, a systemd credential) is not
# about a key of the config file, and is left as it is.
_OPENS_WITH_KEY = re.compile(r"([a-z_]+)(?:\[\d+\])?\.([a-z_]+)(?: = |: )")

E = TypeVar("E", bound=Exception)


def toml_value(value: Any) -> str:
    """`value` as the config file writes it: "text" (TOML escapes), true, 3, 0.5, nan; a string over
    SHOWN_CHARS by its start: "aaa..." (70000 characters)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        if len(value) > SHOWN_CHARS:
            return f'{toml_value(value[:SHOWN_CHARS])[:-1]}..." ({len(value)} characters)'
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        # Control characters as TOML escapes: a NUL or a newline must not reach the one-line message.
        return '"' + _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", escaped) + '"'
    if isinstance(value, dict):
        return "{table}"
    if isinstance(value, list):
        return "[...]"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return repr(value)


def key_value(key: str, value: Any) -> str:
    """`asr.model_dir = "/opt/m"`: how a message about a setting opens (before the config file)."""
    return f"{key} = {toml_value(value)}"


def cannot_listen(host_key: str, host: str, port_key: str, port: int, error: OSError, in_use: str) -> str:
    """Why a server (Wyoming's, Prometheus') cannot listen on host:port, opened with the setting at fault:
    the port when it is taken or privileged, else the address. `in_use`: what may hold the port."""
    if error.errno in (errno.EADDRINUSE, errno.EACCES):
        opening = key_value(port_key, port)
        hint = in_use if error.errno == errno.EADDRINUSE else "a port below 1024 needs root or CAP_NET_BIND_SERVICE"
    else:
        opening = key_value(host_key, host)
        hint = f'{host_key} must be an address of this machine, or "0.0.0.0" for all'
    why = (error.strerror or str(error)).split(" (while attempting to bind", 1)[0]  # socket.create_server's
    return f"{opening}: cannot listen on {host}:{port} ({why}); {hint}"


def names_a_setting(message: str) -> bool:
    """Whether `message` opens with a key of the config ("mqtt.tls_ca = ...")."""
    m = _OPENS_WITH_KEY.match(message)
    return m is not None and m.group(2) in _keys_of().get(m.group(1), ())


def in_config(error: E, source: str) -> E:
    """`error`, opened with the config file (`source`) when it is a VoxnodeError about one of its
    settings and does not say the file yet; else `error` itself."""
    if not isinstance(error, VoxnodeError) or not names_a_setting(str(error)):
        return error
    return type(error)(f"{source}: {error}")


@contextmanager
def naming(key: str, value: Any) -> Iterator[None]:
    """A VoxnodeError raised inside opens with `key = value` (a model's file that is missing names the
    setting that asked for it), unless it names a setting already; one that names `key` without its
    value gets the value."""
    opening = key_value(key, value)
    try:
        yield
    except VoxnodeError as e:
        message = str(e)
        if message.startswith(opening) or (names_a_setting(message) and not message.startswith(f"{key}: ")):
            raise
        raise type(e)(f"{opening}: {message.removeprefix(f'{key}: ')}") from None


def tables_with(key: str) -> list[str]:
    """The tables that have `key`, as the file heads them: "[audio]", "[[streams]]"."""
    return [header for _, header, keys in _tables() if key in keys]


def _keys_of() -> dict[str, tuple[str, ...]]:
    """Each table of the config ("asr", "streams") and its keys."""
    return {name: keys for name, _, keys in _tables()}


def _tables() -> Iterator[tuple[str, str, tuple[str, ...]]]:
    """Each table of the config: its name, its header in the file ("[asr]", "[[streams]]") and its keys."""
    from voxnode.config.root import Config  # the sections' keys, from the dataclasses (root imports this module)

    hints = typing.get_type_hints(Config)
    for f in dataclasses.fields(Config):
        if f.metadata.get("section"):
            yield f.name, f"[{f.name}]", tuple(sub.name for sub in dataclasses.fields(hints[f.name]))
        elif f.metadata.get("table_list"):
            table = f.metadata["table_list"]
            yield f.name, f"[[{f.name}]]", tuple(sub.name for sub in dataclasses.fields(table))
