"""Mean and spread over seeds of `voxnode adapt` runs, and which of issue 26's targets each meets.

    .venv/bin/python -m scripts.adapt.seeds models/whisper-tiny.en+s0/adaptation.json ... [--json OUT]

Runs are grouped by their setting (every training option but the seed); all must share one check
(the same held-out utterances and noise), so tiny.en's "before" is the same in each. For every
setting: per condition and group ("all", "unheard", "new unheard", each talker) the WER before, the mean after and
its range over the seeds; then the targets met (scripts/adapt/evaluate.targets) per seed and on the
seeds' mean, for all talkers, the unheard ones and the trained one.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from scripts.adapt import evaluate

SETTING_KEYS = (
    "layers",
    "adapter",
    "epochs",
    "learning_rate",
    "keep_weights",
    "replay_noise",
    "distill",
    "snr_db",
    "clean_share",
    "speed",
)
# what a run written before an option existed had (`adapter` full, no speed perturbation)
DEFAULTS = {"adapter": "full", "speed": 0.0}
TARGET_GROUPS = ("all", evaluate.UNHEARD, evaluate.NEW, "allison")


def setting(report: dict) -> str:
    t = report["training"]
    return " ".join(f"{k}={t.get(k, DEFAULTS.get(k))}" for k in SETTING_KEYS)


def wers(table: dict, group: str) -> dict[str, float]:
    return {cond: row[group]["wer"] for cond, row in table.items() if group in row}


def summarise(reports: list[dict]) -> dict:
    checks = {
        # (the results file keeps runs without their list of held-out names)
        (tuple(r["training"].get("held_out", ())), r["evaluation"]["utterances"], r["noise"]["sha256"])
        for r in reports
    }
    if len(checks) != 1:
        raise SystemExit("the runs were checked on different utterances or noise: not comparable")
    before = reports[0]["evaluation"]["before"]
    out: dict = {"before": before, "settings": {}}
    by_setting: dict[str, list[dict]] = {}
    for r in reports:
        by_setting.setdefault(setting(r), []).append(r)
    for name, runs in by_setting.items():
        groups = evaluate.group_names(runs[0]["evaluation"])
        rows: dict = {}
        for cond in before:
            for g in groups:
                after = [r["evaluation"]["after"][cond][g]["wer"] for r in runs]
                rows.setdefault(cond, {})[g] = {
                    "before": before[cond][g]["wer"],
                    "mean": round(float(np.mean(after)), 2),
                    "min": min(after),
                    "max": max(after),
                }
        met: dict = {}
        for g in TARGET_GROUPS:
            if g not in groups:
                continue
            b = wers(before, g)
            per_seed = [sum(evaluate.targets(b, wers(r["evaluation"]["after"], g)).values()) for r in runs]
            on_mean = evaluate.targets(b, {c: rows[c][g]["mean"] for c in before})
            met[g] = {"per_seed": per_seed, "on_mean": sum(on_mean.values()), "of": len(on_mean), "which": on_mean}
        out["settings"][name] = {
            "seeds": [r["training"].get("seed") for r in runs],
            "drift": [r["training"]["drift"] for r in runs],
            "cpu_s": [r["training"]["cpu_s"] for r in runs],
            "wer": rows,
            "targets_met": met,
        }
    return out


def markdown(summary: dict) -> list[str]:
    lines = []
    for name, s in summary["settings"].items():
        groups = list(next(iter(s["wer"].values())))
        lines += [
            f"### {name} (seeds {s['seeds']}; drift {s['drift']}; training CPU s {s['cpu_s']})",
            "",
            "| condition | " + " | ".join(f"{g}: before -> mean (range)" for g in groups) + " |",
            "|---|" + "---|" * len(groups),
        ]
        for cond, row in s["wer"].items():
            cells = [f"{c['before']:.1f} -> {c['mean']:.1f} ({c['min']:.1f}-{c['max']:.1f}) %" for c in row.values()]
            lines.append(f"| {cond} | " + " | ".join(cells) + " |")
        lines.append("")
        for g, m in s["targets_met"].items():
            missed = [c for c, ok in m["which"].items() if not ok]
            lines.append(
                f"- targets met, {g}: per seed {m['per_seed']}, on the mean {m['on_mean']} of {m['of']}"
                f" (not: {', '.join(missed) or 'none'})"
            )
        lines.append("")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m scripts.adapt.seeds", description=__doc__)
    p.add_argument("reports", nargs="+", type=Path, help="adaptation.json of each run")
    p.add_argument("--json", type=Path, help="also write the summary here")
    args = p.parse_args(argv)
    reports = []
    for path in args.reports:
        try:
            reports.append(json.loads(path.read_text()))
        except (OSError, ValueError) as e:
            raise SystemExit(f"{path}: not a readable adaptation.json ({e})") from None
        if "evaluation" not in reports[-1]:
            raise SystemExit(f"{path}: no before/after check (run without --check none)")
    summary = summarise(reports)
    print("\n".join(markdown(summary)))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
