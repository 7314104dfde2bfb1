"""scripts/bench/results/adapt_benchmark.json: `voxnode adapt` runs kept for docs/adapt.md, each held-out list once.

    .venv/bin/python -m scripts.adapt.results RUN/adaptation.json ... --label "2026-12-06 night: {name}"

adds each run under its label ({name}: the run's folder name). Every run's report is its whole
adaptation.json, except that the names of its held-out utterances (71 for the wide check, 2.1 kB a run)
are stored once under "held_out_sets" and the run's `training.held_out` names its set; `load` puts the
lists back, so what it returns is what each run wrote (scripts.adapt.seeds and --before-from read that).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from scripts import REPO

RESULTS = REPO / "scripts" / "bench" / "results" / "adapt_benchmark.json"
SETS = "held_out_sets"


def compact(results: dict) -> dict:
    """A copy with every run's held-out list replaced by the name of its entry in results[SETS]."""
    out = {**results, SETS: dict(results.get(SETS, {})), "runs": {}}
    for label, run in results["runs"].items():
        held = run.get("training", {}).get("held_out")
        if isinstance(held, list):
            key = next((k for k, v in out[SETS].items() if v == held), None)
            if key is None:
                stem = f"{run['training'].get('check_set', 'check')} {len(held)}"
                key = stem if stem not in out[SETS] else f"{stem} ({len(out[SETS])})"
                out[SETS][key] = held
            run = {**run, "training": {**run["training"], "held_out": key}}
        out["runs"][label] = run
    return out


def expand(results: dict) -> dict:
    """A copy with every run's `training.held_out` the list itself again, as its adaptation.json had it."""
    sets = results.get(SETS, {})
    runs = {}
    for label, run in results["runs"].items():
        held = run.get("training", {}).get("held_out")
        if isinstance(held, str):
            if held not in sets:
                raise SystemExit(f"{RESULTS.name}: run {label!r} names held-out set {held!r}, which is not stored")
            run = {**run, "training": {**run["training"], "held_out": list(sets[held])}}
        runs[label] = run
    return {k: v for k, v in results.items() if k != SETS} | {"runs": runs}


def load(path: Path = RESULTS) -> dict:
    """The results with every run as its adaptation.json had it (held-out lists expanded)."""
    try:
        return expand(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError) as e:
        raise SystemExit(f"{path}: not a readable adapt results file ({e})") from None


# an object or array holding no other: written on one line (a WER cell, an epoch's stats, a held-out set)
_INNERMOST = re.compile(r"([{\[])\n\s*([^{}\[\]]*?)\n\s*([}\]])")


def dumps(results: dict) -> str:
    """Indented JSON with each innermost object or array on one line (a third smaller than indent=1)."""
    text = _INNERMOST.sub(
        lambda m: m[1] + " ".join(s.strip() for s in m[2].splitlines()) + m[3], json.dumps(results, indent=1)
    )
    assert json.loads(text) == results
    return text + "\n"


def save(results: dict, path: Path = RESULTS) -> None:
    path.write_text(dumps(compact(results)))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m scripts.adapt.results", description=__doc__)
    p.add_argument("reports", nargs="+", type=Path, help="adaptation.json of each run")
    p.add_argument("--label", required=True, help="each run's key; {name} is its folder's name")
    p.add_argument("--results", type=Path, default=RESULTS, help="the results file (default %(default)s)")
    args = p.parse_args(argv)
    results = load(args.results)
    for path in args.reports:
        try:
            report = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise SystemExit(f"{path}: not a readable adaptation.json ({e})") from None
        results["runs"][args.label.format(name=path.resolve().parent.name)] = report
    save(results, args.results)
    print(f"{args.results}: {len(results['runs'])} runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
