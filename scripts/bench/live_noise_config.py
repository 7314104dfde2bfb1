"""The live-noise benchmark's (scripts/bench/live_noise.py) configuration: the daemon's config file
(defaults + `--set` + `--config-extra`) and the ALSA config whose `type file` PCMs read a FIFO per lane."""

from __future__ import annotations

import json
import os
import re
import tomllib
from pathlib import Path


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    return repr(v)


def spool_path(config: Path) -> Path:
    """The lane's own delivery spool, beside its config in the work folder: lanes run at once, and the
    daemon's default ($STATE_DIRECTORY or /var/lib/voxnode) is one file that a second daemon may not
    share (it then logs an error and delivers every final from memory)."""
    return config.with_suffix(".spool.sqlite")


def transcribe_settings(config_text: str) -> str:
    """What of a lane's config can change `voxnode transcribe`'s text, for transcribe_cuts' cache key:
    the whole file but the audio device and the spool path, which differ between lanes and runs (the
    spool lies in each run's work folder: with it in the key, every run decoded the reference again,
    about a minute each)."""
    return re.sub(r"(?m)^(device|spool_path) = .*$", "", config_text)


def write_config(path: Path, device: str, extra_text: str, sets: dict[str, dict]) -> None:
    base = {"log": {"level": "info"}, "audio": {"device": device}, "delivery": {"spool_path": str(spool_path(path))}}
    extra = tomllib.loads(extra_text) if extra_text else {}
    merged: dict[str, dict] = {}
    for layer in (base, extra, sets):
        for section, values in layer.items():
            merged.setdefault(section, {}).update(values)
    lines = []
    for section, values in merged.items():
        lines.append(f"[{section}]")
        lines += [f"{k} = {toml_value(v)}" for k, v in values.items()]
        lines.append("")
    path.write_text("\n".join(lines))


def alsa_conf(work: Path, lanes: int) -> None:
    (work / "alsa").mkdir(exist_ok=True)
    conf = ""
    for i in range(lanes):
        fifo = work / f"lane{i}.fifo"
        if not fifo.exists():
            os.mkfifo(fifo)
        conf += (
            f'pcm.livebench{i} {{\n type file\n slave.pcm "null"\n file "/dev/null"\n'
            f' infile "{fifo}"\n format "raw"\n}}\n'
        )
    (work / "alsa" / "asoundrc").write_text(conf)
