"""scripts/adapt/results.py: adapt_benchmark.json keeps each held-out list once, and what it loads is each
run's adaptation.json as written (the held-out names that scripts.adapt.seeds and --before-from compare)."""

from __future__ import annotations

import json

import pytest

from scripts.adapt import results


def _run(held: list[str] | None, check_set: str = "wide") -> dict:
    training = {"check_set": check_set, "seed": 0} | ({} if held is None else {"held_out": held})
    return {"training": training, "evaluation": {"before": {"clean": {"all": {"wer": 3.5, "words": 510}}}}}


def test_each_held_out_list_is_stored_once_and_comes_back_on_load(tmp_path) -> None:
    wide, other = [f"asterisk/p{i}" for i in range(71)], ["a", "b"]
    raw = {
        "machine": "test",
        "runs": {"s0": _run(wide), "s1": _run(list(wide)), "quick": _run(other, "classic"), "old": _run(None)},
    }
    path = tmp_path / "r.json"
    results.save(raw, path)
    stored = json.loads(path.read_text())
    assert sorted(map(tuple, stored[results.SETS].values())) == sorted([tuple(wide), tuple(other)])
    assert stored["runs"]["s0"]["training"]["held_out"] == stored["runs"]["s1"]["training"]["held_out"]
    assert all(not isinstance(r["training"].get("held_out"), list) for r in stored["runs"].values())
    assert path.read_text().count("asterisk/p70") == 1
    assert results.load(path) == raw  # every run as its adaptation.json had it
    # saving what was loaded adds no set
    results.save(results.load(path), path)
    assert json.loads(path.read_text())[results.SETS] == stored[results.SETS]


def test_a_run_naming_a_set_that_is_not_stored_is_refused(tmp_path) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"runs": {"s0": {"training": {"held_out": "wide 71"}}}}))
    with pytest.raises(SystemExit, match="held-out set 'wide 71', which is not stored"):
        results.load(path)


def test_innermost_objects_are_one_line_and_the_json_is_the_same() -> None:
    data = {"runs": {"x": {"after": {"clean": {"all": {"wer": 2.75, "words": 510}}}, "snr": [-5.0, 10.0]}}}
    text = results.dumps(data)
    assert json.loads(text) == data
    assert '{"wer": 2.75, "words": 510}' in text and '"snr": [-5.0, 10.0]' in text


def test_the_stored_results_hold_each_wide_check_once() -> None:
    stored = json.loads(results.RESULTS.read_text())
    runs = results.load()["runs"]
    wide = [r for r in runs.values() if r["training"].get("check_set") == "wide"]
    # 71 utterances until the new talkers (other_talkers: 62 more) joined the wide check on 2026-12-06;
    # 195: those 133 and one in five of the user's own utterances (the --utterances run, docs/adapt.md)
    assert len(wide) >= 13 and {len(r["training"]["held_out"]) for r in wide} == {71, 133, 195}
    assert all(isinstance(r["training"].get("held_out", ""), str) for r in stored["runs"].values())
    assert list(stored[results.SETS]) == ["wide 71", "wide 133", "wide 195"]
