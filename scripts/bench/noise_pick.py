"""Issue 22, third pass: decode each utterance twice (the plain recognition audio and the enhanced
one, or two attenuation limits) and keep the hypothesis the model is surer of. Scored offline on
the decodes scripts/bench/probe_noise_levers.py records (`--json`), so no rule needs a decode of its own.

A rule ranks each candidate decode by

    mean token log-prob  -  a * no-speech probability  -  c * max(0, compression ratio - CR_FREE)
                         +  m  (the first setting listed only: a margin it keeps)

and a decode the engine's guards emptied (no speech, repetition) ranks below any with text. Guard
against fitting the figure reported: every rule is scored on the even clips of each condition (index
0, 2, ...: where the rule is chosen, by the lowest mean WER over the conditions) and on the odd ones
(reported), each setting alone and the oracle (per clip the candidate with the fewest errors: the
upper bound) beside them.

    .venv-bench/bin/python -m scripts.bench.noise_pick --decodes F --pick df12,off df12,off,df24
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import zlib
from collections.abc import Sequence
from pathlib import Path

from scripts.bench import scoring

CR_FREE = 2.0  # gzip compression ratio of ordinary text is under ~1.8; a looping decode's is above 2.4
# (a, m, c): the no-speech weight, the first setting's margin, the compression penalty's weight.
RULES = {
    f"lp{f' -{a:g}nsp' if a else ''}{f' +{m:g}first' if m else ''}{f' -{c:g}cr' if c else ''}": (a, m, c)
    for a, m, c in itertools.product((0.0, 1.0), (0.0, 0.1, 0.2, 0.3), (0.0, 1.0))
}
HALVES = {"even": 0, "odd": 1}


def load_decodes(path: Path) -> list[dict]:
    """probe_noise_levers.py's `--json` rows, or a saved result holding them under "decodes"."""
    data = json.loads(path.read_text())
    return data["decodes"] if isinstance(data, dict) else data


def compression_ratio(text: str) -> float:
    """Whisper's: the text's UTF-8 bytes over their zlib-compressed length."""
    b = text.encode()
    return len(b) / len(zlib.compress(b)) if b else 0.0


def rank(row: dict, first: bool, a: float, m: float, c: float) -> tuple[bool, float]:
    s = row["logprob"] - a * row["no_speech"] - c * max(0.0, compression_ratio(row["text"]) - CR_FREE)
    return bool(row["text"].strip()), s + (m if first else 0.0)


def pick(candidates: Sequence[dict], a: float, m: float, c: float) -> dict:
    """The candidate the rule ranks highest (candidates in the order listed; ties: the earlier)."""
    best = max(range(len(candidates)), key=lambda i: (rank(candidates[i], i == 0, a, m, c), -i))
    return candidates[best]


def _wer(scores: list[scoring.Score]) -> float:
    return sum(scores, scoring.ZERO).wer


def report(rows: list[dict], settings: list[str], decode: str, conditions: list[str]) -> str:
    """A markdown table: WER even / odd clips for each setting alone, each rule and the oracle, per
    condition; then the rule chosen on the even clips, how often it picked each setting, and the cost."""
    by = {(r["condition"], r["index"], r["enhance"]): r for r in rows if r["decode"] == decode}
    clips = {
        cond: sorted({i for (c, i, e) in by if c == cond and all((c, i, s) in by for s in settings)})
        for cond in conditions
    }
    err = {k: scoring.score(r["reference"], r["text"]) for k, r in by.items()}

    def cells(choose) -> dict[str, dict[str, float]]:
        """condition -> half -> WER, `choose(cond, index)` giving the key of the decode kept."""
        out: dict[str, dict[str, float]] = {}
        for cond in conditions:
            kept = {i: err[choose(cond, i)] for i in clips[cond]}
            out[cond] = {h: _wer([s for i, s in kept.items() if i % 2 == p]) for h, p in HALVES.items()}
            out[cond]["all"] = _wer(list(kept.values()))
        return out

    lines: dict[str, dict[str, dict[str, float]]] = {}
    for s in settings:
        lines[f"{s} alone"] = cells(lambda cond, i, s=s: (cond, i, s))
    chosen: dict[str, dict[tuple[str, int], str]] = {}
    for name, (a, m, c) in RULES.items():
        picks = {
            (cond, i): pick([by[(cond, i, s)] for s in settings], a, m, c)["enhance"]
            for cond in conditions
            for i in clips[cond]
        }
        chosen[name] = picks
        lines[name] = cells(lambda cond, i, p=picks: (cond, i, p[(cond, i)]))
    lines["oracle"] = cells(lambda cond, i: min(((cond, i, s) for s in settings), key=lambda k: err[k].errors))

    def mean(name: str, half: str) -> float:
        return sum(lines[name][c][half] for c in conditions) / len(conditions)

    best = min(RULES, key=lambda n: mean(n, "even"))  # ties: the simpler rule (listed first)
    out = [
        f"Pick from {' / '.join(settings)} (decode {decode}); WER % on the even / odd clips of each condition "
        f"(the rule is chosen on the even ones), then all:",
        "",
        "| | " + " | ".join(conditions) + " | mean (even / odd) |",
        "|---|" + "---|" * (len(conditions) + 1),
    ]
    for name, cond_cells in lines.items():
        row = " | ".join(f"{cond_cells[c]['even']:.1f} / {cond_cells[c]['odd']:.1f}" for c in conditions)
        mark = " (chosen)" if name == best else ""
        out.append(f"| {name}{mark} | {row} | {mean(name, 'even'):.1f} / {mean(name, 'odd'):.1f} |")
    out += ["", "All clips:", "", "| | " + " | ".join(conditions) + " |", "|---|" + "---|" * len(conditions)]
    for name in [*(f"{s} alone" for s in settings), best, "oracle"]:
        out.append(f"| {name} | " + " | ".join(f"{lines[name][c]['all']:.1f}" for c in conditions) + " |")
    share = {s: sum(v == s for v in chosen[best].values()) for s in settings}
    # Where the candidates' errors differ: how often the rule, and the first setting alone, kept a best one.
    differ = [
        (cond, i) for cond in conditions for i in clips[cond] if len({err[(cond, i, s)].errors for s in settings}) > 1
    ]
    least = {k: min(err[(*k, s)].errors for s in settings) for k in differ}
    right = sum(err[(*k, chosen[best][k])].errors == least[k] for k in differ)
    first = sum(err[(*k, settings[0])].errors == least[k] for k in differ)
    out.append("")
    out.append(f"chosen on the even clips: {best!r}; it kept " + ", ".join(f"{s} {n}" for s, n in share.items()))
    out.append(
        f"where the candidates differ ({len(differ)} clips) it kept one with the fewest errors in {right} "
        f"({100 * right / max(1, len(differ)):.0f} %), {settings[0]} alone in {first}"
    )
    cpu = {
        s: [r["cpu_ms"] for r in rows if r["enhance"] == s and r["decode"] == decode and "cpu_ms" in r]
        for s in settings
    }
    out.append(
        "decode CPU ms per clip (mean): "
        + ", ".join(f"{s} {sum(v) / len(v):.0f}" for s, v in cpu.items() if v)
        + (f"; all {len(settings)}: {sum(sum(v) / len(v) for v in cpu.values()):.0f}" if all(cpu.values()) else "")
    )
    return "\n".join(out)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--decodes", type=Path, required=True, help="probe_noise_levers.py --json output (or a result)")
    p.add_argument("--pick", nargs="+", required=True, help="enhancements to pick from, joined by ,")
    p.add_argument("--decode", default="default")
    p.add_argument("--conditions", nargs="+", help="default: every condition in the file, in its order")
    args = p.parse_args()
    rows = load_decodes(args.decodes)
    conditions = args.conditions or list(dict.fromkeys(r["condition"] for r in rows))
    for spec in args.pick:
        print(report(rows, spec.split(","), args.decode, conditions), "\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
