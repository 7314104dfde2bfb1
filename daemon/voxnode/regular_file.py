"""Reading a small file a user named in the config (the config file itself, a wake word manifest and
its model, the MQTT password and TLS files, the node's mute record) without ever waiting on it, and
without reading more than such a file can be.

Opening a FIFO waits for a writer: `voxnode run`, `check-config` and every reload hung there,
SIGTERM included (issue 27, the config file; then a wake manifest). So the kind is looked at before
the open (opening a device can have effects), the open does not wait (O_NONBLOCK), and the opened
file is looked at again (it may have been swapped in between). The read is bounded: a log or a
device given in the file's place does not fill memory. Every way it fails is one line that opens
with `what` (the file as the user knows it: "config file /etc/voxnode/config.toml"), raised as the
caller's `error` (ConfigError unless it says).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from voxnode.errors import ConfigError

StrPath = str | os.PathLike[str]


def read_regular_file(path: StrPath, what: str, max_bytes: int, error: type[Exception] = ConfigError) -> bytes:
    """The bytes of `path`, a regular file of at most `max_bytes`."""
    raw = read_regular_file_if_any(path, what, max_bytes, error)
    if raw is None:
        raise _missing(what, error)
    return raw


def read_regular_file_if_any(
    path: StrPath, what: str, max_bytes: int, error: type[Exception] = ConfigError
) -> bytes | None:
    """As read_regular_file, but None where nothing is at `path` (a link to nothing included)."""
    try:
        with _opened(path, what, error) as f:
            raw = f.read(max_bytes + 1)
    except FileNotFoundError:
        return None
    if len(raw) > max_bytes:
        raise error(f"{what} is larger than {_size(max_bytes)}; is it the right file?")
    return raw


def read_head(path: StrPath, what: str, n: int, error: type[Exception] = ConfigError) -> bytes:
    """At most the first `n` bytes of `path`, a regular file, whatever its size (for a caller that
    reads its first line)."""
    raw = read_head_if_any(path, what, n, error)
    if raw is None:
        raise _missing(what, error)
    return raw


def read_head_if_any(path: StrPath, what: str, n: int, error: type[Exception] = ConfigError) -> bytes | None:
    """As read_head, but None where nothing is at `path`. Also for /proc and /sys files, regular but
    of no size (st_size 0 or 4096 whatever they hold): the read is capped, not the size checked."""
    try:
        with _opened(path, what, error) as f:
            return f.read(n)
    except FileNotFoundError:
        return None


def check_regular_file(path: StrPath, what: str, error: type[Exception] = ConfigError) -> None:
    """`path` is a regular file this process may read (opened without waiting, and closed again):
    for a file something else reads later (a model's interpreter, the TLS library)."""
    try:
        with _opened(path, what, error):
            pass
    except FileNotFoundError:
        raise _missing(what, error) from None


def _missing(what: str, error: type[Exception]) -> Exception:
    return error(f"{what} does not exist")


@contextmanager
def _opened(path: StrPath, what: str, error: type[Exception]) -> Iterator[BinaryIO]:
    """The open file; a fault while it is open (a read's EIO) is `error` too. Nothing at `path`:
    FileNotFoundError, which each caller words as it needs."""
    path = Path(path)
    try:
        _check_kind(what, os.stat(path).st_mode, error)
        with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC), "rb") as f:
            _check_kind(what, os.fstat(f.fileno()).st_mode, error)
            yield f
    except FileNotFoundError:
        raise
    except PermissionError:
        raise error(f"{what} is not readable (permission denied)") from None
    except OSError as e:
        raise error(f"{what} cannot be read: {e.strerror or e}") from None


def _check_kind(what: str, mode: int, error: type[Exception]) -> None:
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        raise error(f"{what} is a directory")
    kind = (
        "a FIFO (named pipe)"
        if stat.S_ISFIFO(mode)
        else "a device"
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "a special file"
    )
    raise error(f"{what} is {kind}, not a regular file")


def _size(n: int) -> str:
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} bytes"
