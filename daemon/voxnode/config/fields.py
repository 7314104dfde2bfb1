"""Declaring settings: each one carries its default, its documentation and its bounds.

The loader and the reference renderer both read this metadata, so the
validation rules, the error messages and `config/voxnode.toml` cannot drift
apart.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any


def setting(
    default: Any,
    doc: str,
    *,
    min: float | None = None,
    max: float | None = None,
    choices: tuple[Any, ...] | None = None,
    pattern: str | None = None,
    secret: bool = False,
    aliases: tuple[tuple[Any, Any], ...] = (),
    compare: bool = True,
    formerly: str = "",
) -> Any:
    """A scalar setting. `doc` is the one-line comment shown in the reference file.

    `aliases`: (old value, value) pairs still accepted from older configs, e.g. ((True, "all"),).
    compare=False: the setting does not take part in `==`, so a reload that changes only it
    does not count as a change of its section (e.g. a stream's Home Assistant area must not
    restart the stream's capture).
    formerly: the key's old place ("mqtt.spool_path"), still accepted there (the loader moves it;
    setting both is an error) and named in the reference file.
    """
    meta = {
        "doc": doc,
        "min": min,
        "max": max,
        "choices": choices,
        "pattern": pattern,
        "secret": secret,
        "aliases": aliases,
        "formerly": formerly,
    }
    if isinstance(default, (list, dict, set)):
        raise TypeError("use tuples for list defaults: config objects are immutable")
    return field(default=default, metadata=meta, compare=compare)


def section(cls: type, doc: str) -> Any:
    """A nested `[table]` of settings."""
    return field(default_factory=cls, metadata={"doc": doc, "section": True})


def table_list(cls: type, doc: str, example: dict[str, Any] | None = None) -> Any:
    """An `[[array of tables]]`, empty by default."""
    return field(default=(), metadata={"doc": doc, "table_list": cls, "example": example or {}})


class InvalidValue(ValueError):
    """Raised by a section's `check()` for rules that involve several keys. The loader words it as its
    own messages: `<file>: <section.key> = <value>: <message>`. `value`: where `key` is not a field of
    the section that raises it (Config.check's "wake.model"), the value to show."""

    def __init__(self, key: str, message: str, value: Any = None):
        super().__init__(message)
        self.key = key
        self.message = message
        self.value = value
