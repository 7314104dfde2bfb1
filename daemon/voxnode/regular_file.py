"""Reading a small file a user named in the config (the config file itself, a wake word manifest)
without ever waiting on it, and without reading more than such a file can be.

Opening a FIFO waits for a writer: `voxnode run`, `check-config` and every reload hung there,
SIGTERM included (issue 27, the config file; then a wake manifest). So the kind is looked at before
the open (opening a device can have effects), the open does not wait (O_NONBLOCK), and the opened
file is looked at again (it may have been swapped in between). The read is bounded: a log or a
device given in the file's place does not fill memory.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from voxnode.errors import ConfigError


def read_regular_file(path: str | os.PathLike[str], what: str, max_bytes: int) -> bytes:
    """The bytes of `path`, a regular file of at most `max_bytes`. Otherwise a ConfigError whose
    message opens with `what` (the file as the user knows it: "config file /etc/voxnode/config.toml")."""
    path = Path(path)
    try:
        _check_kind(what, os.stat(path).st_mode)
        with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC), "rb") as f:
            _check_kind(what, os.fstat(f.fileno()).st_mode)
            raw = f.read(max_bytes + 1)
    except FileNotFoundError:
        raise ConfigError(f"{what} does not exist") from None
    except PermissionError:
        raise ConfigError(f"{what} is not readable (permission denied)") from None
    except OSError as e:
        raise ConfigError(f"{what} cannot be read: {e.strerror or e}") from None
    if len(raw) > max_bytes:
        raise ConfigError(f"{what} is larger than {_size(max_bytes)}; is it the right file?")
    return raw


def _check_kind(what: str, mode: int) -> None:
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        raise ConfigError(f"{what} is a directory")
    kind = (
        "a FIFO (named pipe)"
        if stat.S_ISFIFO(mode)
        else "a device"
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "a special file"
    )
    raise ConfigError(f"{what} is {kind}, not a regular file")


def _size(n: int) -> str:
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} bytes"
