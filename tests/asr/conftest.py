"""ASR test fixtures: the committed int8 model, loaded once per session, and speech clips.

Real recorded speech comes from Debian's pocketsphinx-testdata; synthetic
speech is made at test time with espeak-ng (a 22050 Hz WAV, so reading it
also exercises resampling).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

POCKETSPHINX = Path("/usr/share/pocketsphinx/test/data")

ESPEAK_SENTENCES = (
    "Turn on the kitchen lights and set the timer for ten minutes.",
    "The weather tomorrow will be cloudy with a chance of rain.",
    "Please remind me to call the plumber on Friday morning.",
    "Open the garage door and switch off the heating.",
)


@pytest.fixture(scope="session")
def engine():
    from voxnode.asr import default_model_dir
    from voxnode.asr.whisper.engine import WhisperEngine

    with WhisperEngine.load(default_model_dir()) as engine:
        yield engine


def pocketsphinx_utterances() -> list[tuple[Path, str]]:
    """(wav, transcript) for the librivox and cards sets."""
    if not POCKETSPHINX.is_dir():
        pytest.skip("pocketsphinx-testdata is not installed (apt-get install pocketsphinx-testdata)")
    out = []
    for sub, listing in (("librivox", "transcription"), ("cards", "cards.transcription")):
        for line in (POCKETSPHINX / sub / listing).read_text().splitlines():
            m = re.match(r"<s>(.*)</s>\s*\((.+)\)", line.strip())
            if m:
                out.append((POCKETSPHINX / sub / f"{m.group(2).strip()}.wav", m.group(1).strip()))
    return out


@pytest.fixture(scope="session")
def espeak_clips(tmp_path_factory) -> list[tuple[Path, str]]:
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed")
    d = tmp_path_factory.mktemp("espeak")
    clips = []
    for i, text in enumerate(ESPEAK_SENTENCES):
        path = d / f"s{i}.wav"
        subprocess.run(["espeak-ng", "-w", str(path), text], check=True)
        clips.append((path, text))
    return clips
