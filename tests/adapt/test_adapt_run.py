"""A tiny end-to-end `voxnode adapt` run (issue 26): real TensorFlow training on the exporter's own
graphs, the real conversion, the runtime's loader.

Three real utterances (pocketsphinx-testdata's, given as the user's own) in 30 s of pink noise, one
epoch, the cross-attention layers only: the loss on its own training mixes goes down, and the
exported model loads with every op on XNNPACK and transcribes. Needs the build-time venv
(`make adapt-venv`, which `make test` builds); skipped, with the reason, only where it cannot be
built (tensorflow-cpu has no wheel for the machine) or was not built (a bare `pytest`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from voxnode.adapt_tool import ADAPT_VENV, checkout_root, tool_env
from voxnode.asr.wer import wer
from voxnode.audio.wavfile import read_audio

from ..asr.conftest import pocketsphinx_utterances

ROOT = checkout_root()
UNAVAILABLE = ROOT / f"{ADAPT_VENV}.unavailable"  # written by `make adapt-venv-or-skip` when pip fails


def _skip_reason() -> str | None:
    if (ROOT / ADAPT_VENV / ".installed").is_file():
        return None
    if UNAVAILABLE.is_file():
        return f"the build-time venv {ADAPT_VENV} cannot be built here: {UNAVAILABLE.read_text().strip()}"
    return f"the build-time venv {ADAPT_VENV} is not built (make adapt-venv; `make test` builds it)"


needs_venv = pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason()))


def probe_in_adapt_venv(*argv: str, timeout: float = 600) -> dict:
    """Run `python ARGV...` in the build-time venv (TensorFlow lives there only) from the checkout; what
    it printed last, as JSON. Its stderr's tail is the message where it fails."""
    proc = subprocess.run(
        [str(ROOT / ADAPT_VENV / "bin" / "python"), *argv],
        cwd=ROOT,
        env=tool_env(ROOT),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def adapted(adapt_runs) -> tuple[Path, subprocess.CompletedProcess]:
    return adapt_runs.adapted()  # tests/adapt/conftest.py: started beside the probes


@needs_venv
def test_training_lowers_the_loss_on_its_own_data(adapted) -> None:
    out, _ = adapted
    report = json.loads((out / "adaptation.json").read_text())
    loss = report["training"]["probe_loss"]
    assert report["training"]["utterances"] == 3 and report["training"]["epochs"] == 1
    assert loss["after"] < loss["before"] * 0.95, loss


@needs_venv
def test_the_exported_model_runs_on_xnnpack_and_transcribes(adapted) -> None:
    from voxnode.asr.whisper.engine import WhisperEngine
    from voxnode.models.files import read_manifest

    out, _ = adapted
    read_manifest(out)  # every file listed and its checksum right
    with WhisperEngine.load(out) as engine:
        assert engine.info.fully_accelerated, engine.info
        assert engine.info.model == "whisper-tiny.en+test"
        path, text = pocketsphinx_utterances()[4]  # a LibriVox sentence, clean
        hyp = engine.transcribe(read_audio(path)).text
    assert wer(text, hyp) < 0.35, hyp
    assert "MODEL.md" in {p.name for p in out.iterdir()}


def test_missing_venv_is_one_clear_line(tmp_path) -> None:
    env = {**os.environ, "VOXNODE_ADAPT_PYTHON": str(tmp_path / "none" / "bin" / "python")}
    proc = subprocess.run(
        [sys.executable, "-m", "voxnode", "adapt", "--noise", "x.wav"], env=env, capture_output=True, text=True
    )
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and "make adapt-venv" in proc.stderr, proc.stderr


@needs_venv
def test_the_variant_is_found_by_name_and_by_path(adapted) -> None:
    from voxnode.asr.whisper.files import default_model_dir
    from voxnode.models.find import CHECKOUT_MODELS

    out, _ = adapted
    assert default_model_dir(None, str(out)) == out  # [asr] model = "/path/to/whisper-tiny.en+test"
    label = f"ci{os.getpid()}"
    link = CHECKOUT_MODELS / f"whisper-tiny.en+{label}"  # as if installed beside the shipped model
    link.symlink_to(out, target_is_directory=True)
    try:
        assert default_model_dir(None, f"tiny.en+{label}") == link
    finally:
        link.unlink()
