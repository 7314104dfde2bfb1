"""The terms that keep `voxnode adapt` near tiny.en (issue 26, scripts/adapt/regularise.py): distillation
to the unadapted model and L2-SP, each checked on its own and as the Trainer wires it, on tiny.en's
real weights. TensorFlow lives in the build-time venv only, so tests/adapt/regularise_probe.py runs
there and these tests assert on what it measured; skipped, with the reason, where that venv cannot
be built (as test_adapt_run.py)."""

from __future__ import annotations

import pytest

from .test_adapt_run import needs_venv


@pytest.fixture(scope="module")
def probe(adapt_runs) -> dict:
    return adapt_runs.probe("regularise")  # tests/adapt/conftest.py: started beside the other runs


@needs_venv
def test_kl_is_zero_when_the_student_is_the_teacher_and_positive_otherwise(probe) -> None:
    assert abs(probe["kl_same"]) < 1e-5, probe
    assert probe["kl_other"] > 0.05, probe


@needs_venv
def test_a_kl_gradient_step_moves_the_student_towards_the_teacher(probe) -> None:
    assert probe["kl_after_step"] < 0.9 * probe["kl_other"], probe


@needs_venv
def test_l2_sp_pulls_the_trained_weights_back_towards_tiny_en(probe) -> None:
    before, after = probe["drift_1"]
    assert after < 0.99 * before, probe
    before, after = probe["drift_0"]  # off: an update with no gradients leaves the weights where they are
    assert after == pytest.approx(before, rel=1e-6), probe


@needs_venv
def test_distillation_adds_nothing_on_the_clean_utterance_and_pulls_on_the_noisy_one(probe) -> None:
    # the teacher's targets come from the same graph with tiny.en's weights: on the very clean
    # utterance the student is the teacher, so the KL's gradient is zero
    assert probe["clean_gap"] < 1e-3, probe
    assert probe["noisy_gap"] > 0.01, probe


@needs_venv
def test_the_teacher_is_only_taken_before_training(probe) -> None:
    assert probe["teacher_after_update"] == "refused"
