"""Logging setup: journald with structured fields under systemd, human-readable lines on stderr otherwise."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping

from voxnode.config.log import LogConfig


def setup_logging(config: LogConfig, stream=None, environ: Mapping[str, str] | None = None) -> str:
    """Configure the root logger; returns "journald" or "stderr". An explicit `stream` forces stderr-style."""
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    handler = None
    if stream is None:
        from voxnode.systemd.journal import journal_handler, journald_wanted

        if journald_wanted(os.environ if environ is None else environ):
            handler = journal_handler()
    target = "journald" if handler is not None else "stderr"
    if handler is None:
        handler = logging.StreamHandler(stream or sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s", "%H:%M:%S"))
    root.addHandler(handler)
    root.setLevel(config.level.upper())
    return target
