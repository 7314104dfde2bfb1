"""Shared test fixtures: a real ALSA configuration with file-backed capture PCMs.

alsa-lib loads its configuration once per process, so every PCM the in-process
tests need is defined here, up front, in one asoundrc under a session folder
that $XDG_CONFIG_HOME points at before anything touches ALSA. Tests that need a
different ALSA setup run the code in a subprocess with their own environment.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ALSA_DIR = Path(tempfile.mkdtemp(prefix="voxnode-test-alsa-"))
atexit.register(shutil.rmtree, ALSA_DIR, ignore_errors=True)


def alsa_file_pcm(name: str, infile: Path) -> str:
    return (
        f'pcm.{name} {{\n    type file\n    slave.pcm "null"\n    file "/dev/null"\n'
        f'    infile "{infile}"\n    format "raw"\n}}\n'
    )


ALSA_PCMS = {
    "vx_file": ALSA_DIR / "in.raw",  # regular file: reads return at once
    "vx_fifo": ALSA_DIR / "mic.fifo",  # FIFO: the test paces the audio
    "vx_late": ALSA_DIR / "late.raw",  # absent at first: a device that is not there yet
    "vx_ref": ALSA_DIR / "ref.fifo",  # FIFO: an echo reference (what the node plays), paced with vx_fifo
}
_conf = "".join(alsa_file_pcm(n, p) for n, p in ALSA_PCMS.items())
(ALSA_DIR / "alsa").mkdir()
(ALSA_DIR / "alsa" / "asoundrc").write_text(_conf)
os.environ["XDG_CONFIG_HOME"] = str(ALSA_DIR)
os.mkfifo(ALSA_PCMS["vx_fifo"])
os.mkfifo(ALSA_PCMS["vx_ref"])
