"""Logging setup: human-readable lines on stderr (journald support lives in voxnode.service)."""

from __future__ import annotations

import logging
import sys

from voxnode.config.log import LogConfig


def setup_logging(config: LogConfig, stream=None) -> None:
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s", "%H:%M:%S"))
    root.addHandler(handler)
    root.setLevel(config.level.upper())
