"""The benchmarks' `--set section.key=value` (scripts/bench/settings.py): TOML values checked by voxnode's
config loader, and a bad one stops stream.py and eval_noise_only.py with its one line before anything loads
(before: a traceback after loading Whisper)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from scripts.bench.settings import apply_sets, parse_sets
from tests.alsa_env import ROOT
from voxnode.config import Config

pytestmark = pytest.mark.unit  # make check: needs only the venv (pyproject.toml markers)


def test_values_are_toml_and_bare_words_strings():
    items = ["vad.engine=spectral", "vad.hangover_ms=700", 'asr.hotwords=["Voxnode"]', "stream.partials=false"]
    sets = parse_sets(items)
    assert sets == {
        "vad": {"engine": "spectral", "hangover_ms": 700},
        "asr": {"hotwords": ["Voxnode"]},
        "stream": {"partials": False},
    }
    c = apply_sets(Config(), sets)
    assert (c.vad.engine, c.vad.hangover_ms, c.stream.partials) == ("spectral", 700, False)
    assert c.asr.hotwords == ("Voxnode",)  # a tuple, as the loader makes it
    assert c.vad.tail_ms == Config().vad.tail_ms  # the rest as it was


@pytest.mark.parametrize(
    ("item", "line"),
    [
        ("vad.engnie=spectral", "--set: unknown key 'vad.engnie' in [vad] (did you mean 'engine'?)"),
        ("vad.hangover_ms=long", '--set: vad.hangover_ms = "long": expected an integer'),
        ("asr.beam_size=99", "--set: asr.beam_size = 99: must be between 1 and 8"),
        ("vad.silero_threshold=nan", "--set: vad.silero_threshold = nan: expected a finite number (not nan or inf)"),
        ("hangover_ms=700", "--set 'hangover_ms=700': expected section.key=value"),
    ],
)
def test_a_bad_setting_is_the_loaders_one_line(item, line):
    with pytest.raises(SystemExit) as e:
        parse_sets([item])
    assert str(e.value) == line


@pytest.mark.parametrize("tool", ["scripts.bench.eval_noise_only", "scripts.bench.stream"])
def test_the_tools_stop_on_it_before_anything_loads(tool):
    p = subprocess.run(
        [sys.executable, "-m", tool, "--set", "vad.engnie=spectral"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert p.stderr == "--set: unknown key 'vad.engnie' in [vad] (did you mean 'engine'?)\n"
