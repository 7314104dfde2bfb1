"""The low-rank adapter of `voxnode adapt --adapter lora:R` (issue 26, scripts/adapt/weights.py) on
tiny.en's real weights and a real utterance: it changes nothing until trained, only its A and B are
trained (a small share of the layers' weights), an update moves it, and merging it into the weights
gives the outputs of the unmerged graph (so the exported model, with tiny.en's shapes, is what was
trained). TensorFlow lives in the build-time venv only: tests/adapt/lora_probe.py runs there and these
tests assert on what it measured; skipped, with the reason, where that venv cannot be built."""

from __future__ import annotations

import subprocess

import pytest

from voxnode.adapt_tool import tool_env

from .test_adapt_run import ROOT, needs_venv


@pytest.fixture(scope="module")
def probe(adapt_runs) -> dict:
    return adapt_runs.probe("lora")  # tests/adapt/conftest.py: started beside the other runs


@needs_venv
def test_the_adapter_changes_nothing_before_training(probe) -> None:
    assert probe["init_gap"] < 1e-5, probe
    assert probe["init_drift"] == 0.0, probe


@needs_venv
def test_only_the_low_rank_factors_are_trained(probe) -> None:
    assert probe["names"] == ["a", "b"], probe
    assert 0 < probe["parameters"] < 0.05 * probe["full_parameters"], probe


@needs_venv
def test_an_update_moves_the_adapter_and_lowers_the_loss(probe) -> None:
    assert probe["drift_after_step"] > 0, probe
    before, after = probe["loss"]
    assert after < before, probe


@needs_venv
def test_merged_weights_give_the_unmerged_graphs_outputs(probe) -> None:
    assert probe["moved_gap"] > 0.01, probe  # the adapter is in the graph
    assert probe["merged_moved_gap"] > 0.01, probe  # the merged weights carry it
    assert probe["merge_gap"] < 1e-4, probe
    assert probe["merged_same_shapes"], probe


@needs_venv
@pytest.mark.parametrize("adapter", ["lora:0", "lora:65", "lora", "lora:x", "rank:8"])
def test_a_bad_adapter_is_one_line_naming_the_option(adapter, tmp_path) -> None:
    noise = ROOT / "scripts" / "bench" / "results" / "adapt_benchmark.json"  # any existing file: parsing fails first
    proc = subprocess.run(
        [str(ROOT / ".venv-adapt" / "bin" / "python"), "-m", "scripts.adapt", "--noise", str(noise), "--name", "t"]
        + ["--out", str(tmp_path / "m"), "--adapter", adapter],
        cwd=ROOT,
        env=tool_env(ROOT),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert "--adapter" in last and "lora:R" in last and "Traceback" not in proc.stderr, proc.stderr
