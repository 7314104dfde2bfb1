"""Typed, validated, immutable configuration.

One file per section (audio.py, asr.py, ...); `root.Config` composes them.
Build it with `load_config()` and pass it down: nothing reads config globally.
"""

from voxnode.config.loader import DEFAULT_PATH, load_config, parse_config
from voxnode.config.render import render_effective, render_reference
from voxnode.config.root import Config

__all__ = ["Config", "DEFAULT_PATH", "load_config", "parse_config", "render_effective", "render_reference"]
