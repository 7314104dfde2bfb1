"""scripts/bench/wake.py: how it picks each model's cutoff from its measurements (the rule the
shipped SHIPPED_CUTOFFS come from), on figures made up to exercise each branch."""

from __future__ import annotations

from scripts.bench import wake as bw
from scripts.bench import wake_detect as wd


def _fa(model: str, counts: dict[str, int], hours: float = 3.0) -> dict:
    per_source = {label: {"false_accepts": n} for label, n in counts.items()}
    return {"models": {model: {"speech": {"hours": hours, "all_frames": {"cutoffs": per_source}}}}}


def _acc(model: str, at10: dict[str, float], at5: dict[str, float]) -> dict:
    return {
        model: {
            "cutoffs": {
                label: {"skip_silence": {"percent_by_snr": {"10": at10[label], "5": at5[label]}}} for label in at10
            }
        }
    }


def test_the_best_acceptance_within_the_false_accept_target_wins():
    labels = [label for label, _ in wd.cutoffs_for("alexa")]  # "model" (0.9) and the sweep
    fa = {label: 0 for label in labels} | {"0.5": 2, "0.4": 5, "0.6": 1}  # 1 in 3 h is 0.33/h: allowed
    at10 = {label: 90.0 for label in labels} | {"0.6": 96.0, "0.5": 97.0, "0.4": 98.0}
    at5 = {label: 80.0 for label in labels}
    chosen = bw.choose_cutoffs(_fa("alexa", fa), _acc("alexa", at10, at5))["alexa"]
    assert chosen["cutoff"] == 0.6 and chosen["per_hour"] == 0.33 and chosen["met_fa_target"]


def test_a_tie_keeps_the_manifest_cutoff_and_no_acceptable_cutoff_takes_the_highest():
    labels = [label for label, _ in wd.cutoffs_for("hey_jarvis")]
    tie = {label: 100.0 for label in labels}
    chosen = bw.choose_cutoffs(_fa("hey_jarvis", {label: 0 for label in labels}), _acc("hey_jarvis", tie, tie))
    assert chosen["hey_jarvis"]["cutoff"] == wd.manifest_cutoff("hey_jarvis")
    noisy = bw.choose_cutoffs(_fa("hey_jarvis", {label: 9 for label in labels}), _acc("hey_jarvis", tie, tie))
    assert noisy["hey_jarvis"]["cutoff"] == max(c for _, c in wd.cutoffs_for("hey_jarvis"))
    assert not noisy["hey_jarvis"]["met_fa_target"]
