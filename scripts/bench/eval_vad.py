"""Evaluate frame VADs: precision/recall in noise, false triggers on noise only, CPU, memory.

Speech track (`--speech real`, the default): recorded human speech only, from
scripts/bench/speech_corpus.py (pocketsphinx-testdata's 10 clips, 2 speakers, plus Asterisk prompts,
1 speaker, 8 kHz recordings resampled), at -32..-20 dBFS, separated by 0.5-2 s of digital
silence, labelled per 20 ms frame by energy on the clean signal. `--speech legacy` is the
first evaluation's track (12 espeak-ng sentences + the 10 pocketsphinx clips).
Noise runs through the whole track (pauses included) at 0/5/10/20 dB SNR: white, pink,
babble (6 overlapping espeak-ng voices), hvac (rumble + 50/100/150 Hz hum), music (synthetic
harmonic notes) and moh (real recorded music: the Asterisk music-on-hold tracks, CC-BY-SA).
False triggers: noise-only audio (after 2 s of digital silence) through front-end + segmenter
with the default endpointing; every utterance that survives onset + minimum speech counts.
CPU: ms per 20 ms frame for the whole front-end (high-pass + VAD), hot loop; and % of one core
when fed in real time the way the daemon does in silence (stream/worker.py IDLE_BATCH frames per wake-up).
Memory (`--rss`): RSS added by 1 and by 4 streams' front-ends, each in a fresh process that has
loaded the Whisper engine first (as the daemon has: LiteRT and XNNPACK are already there).

    make eval-vad      # = .venv/bin/python -m scripts.bench.eval_vad --write docs/vad_eval.md
    .venv/bin/python -m scripts.bench.eval_vad --only silero-0.5,webrtc-3-hp150 --noises white --snrs 10
"""

# Its parts: eval_vad_candidates.py (the VADs compared), eval_vad_audio.py (the speech track and the
# noises), eval_vad_measure.py (what is measured of each); this module runs them and writes the tables.

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

from scripts.bench import audio_corpus as ac
from scripts.bench.eval_vad_audio import NOISE_KINDS, noise, speech_track
from scripts.bench.eval_vad_candidates import CANDIDATES, DEFAULT_ONLY
from scripts.bench.eval_vad_measure import (
    boundary_lags,
    count_triggers,
    f1,
    paced_cpu,
    prf,
    rss_child,
    rss_table,
    run_frames,
)
from voxnode.config import Config
from voxnode.stream.params import segmenter_params
from voxnode.stream.worker import IDLE_BATCH


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=3.0, help="noise-only minutes per kind and level")
    ap.add_argument("--snrs", default="0,5,10,20")
    ap.add_argument("--only", default=DEFAULT_ONLY, help="comma list of candidates, or 'all'")
    ap.add_argument("--noises", default=",".join(NOISE_KINDS))
    ap.add_argument("--speech", choices=("real", "legacy"), default="real")
    ap.add_argument("--paced-s", type=float, default=20.0, help="real-time CPU run per candidate; 0 skips")
    ap.add_argument("--rss", action="store_true", help="also measure memory per candidate (fresh processes)")
    ap.add_argument("--write", metavar="MD", help="also write the tables to this file")
    ap.add_argument("--rss-child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rss_child:
        rss_child(args.rss_child)
        return
    names = list(CANDIDATES) if args.only == "all" else args.only.split(",")
    unknown = [n for n in names if n not in CANDIDATES]
    if unknown:
        raise SystemExit(f"unknown candidates {unknown}; known: {', '.join(CANDIDATES)}")
    cands = {n: CANDIDATES[n] for n in names}
    snrs = [float(s) for s in args.snrs.split(",")]
    kinds = args.noises.split(",")
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    out: list[str] = []

    def say(line: str = "") -> None:
        print(line, flush=True)
        out.append(line)

    x, truth, what, spans = speech_track(args.speech)
    lag_conditions = [("clean", None)] + [(k, 10.0) for k in ("white", "pink", "hvac") if k in kinds]
    lags: dict[tuple[str, str], tuple[list[int], list[int], int]] = {}
    say(f"Speech track: {what}; {len(x) / ac.RATE:.0f} s, {truth.mean() * 100:.0f} % speech frames.")
    rows: dict[tuple[str, str, str], tuple[float, float]] = {}
    cost = {}
    for name, cand in cands.items():
        pred, ms = run_frames(cand, x)
        cost[name] = ms
        rows[(name, "clean", "-")] = prf(pred, truth)
        lags[(name, "clean")] = boundary_lags(pred, x, spans)
    for kind in kinds:
        nz = noise(kind, len(x), seed=7)
        for snr in snrs:
            mixed = ac.mix(x, nz, snr, truth)
            for name, cand in cands.items():
                pred, _ = run_frames(cand, mixed)
                rows[(name, kind, f"{snr:g}")] = prf(pred, truth)
                if (kind, snr) in lag_conditions:
                    lags[(name, kind)] = boundary_lags(pred, x, spans)
    say("\nFrame F1 (mean over the SNRs per noise), CPU of the whole front-end (high-pass + VAD):\n")
    say("| VAD | clean F1 | " + " | ".join(f"{k} F1" for k in kinds) + " | mean F1 (noisy) | ms / 20 ms frame |")
    say("|---|---|" + "---|" * len(kinds) + "---|---|")
    for name in cands:
        per_kind = [np.mean([f1(*rows[(name, k, f"{s:g}")]) for s in snrs]) for k in kinds]
        cells = " | ".join(f"{v:.3f}" for v in per_kind)
        say(
            f"| {name} | {f1(*rows[(name, 'clean', '-')]):.3f} | {cells} | {np.mean(per_kind):.3f} | {cost[name]:.3f} |"
        )
    for name in cands:
        say(f"\n{name}: F1 (precision / recall) per SNR\n")
        say("| noise | " + " | ".join(f"{s:g} dB" for s in snrs) + " |")
        say("|---|" + "---|" * len(snrs))
        for kind in kinds:
            cells = []
            for s in snrs:
                p, r = rows[(name, kind, f"{s:g}")]
                cells.append(f"{f1(p, r):.2f} ({p:.2f} / {r:.2f})")
            say(f"| {kind} | " + " | ".join(cells) + " |")
    say(
        f"\nBoundaries: where the VAD's first and last speech decision of each of the {len(spans)} clips fall "
        "relative to the clip's speech (frames within 20 dB of its loudest), ms, median / 90th percentile "
        "(positive = late; a late end delays every endpoint by as much). Noises at 10 dB SNR:\n"
    )
    conds = [c for c, _ in lag_conditions]
    say("| VAD | " + " | ".join(f"{c} start | {c} end" for c in conds) + " | clips missed |")
    say("|---|" + "---|---|" * len(conds) + "---|")
    for name in cands:
        cells, missed = [], 0
        for c in conds:
            on, off, m = lags[(name, c)]
            missed += m
            for v in (on, off):
                cells.append(f"{np.median(v) * 20:+.0f} / {np.percentile(v, 90) * 20:+.0f}" if v else "-")
        say(f"| {name} | " + " | ".join(cells) + f" | {missed} |")
    seg = segmenter_params(Config())
    n = int(args.minutes * 60 * ac.RATE)
    say(
        f"\nFalse triggers per hour on noise only ({args.minutes:g} min per kind and level, after 2 s of "
        "digital silence, then noise), front-end + segmenter with the default endpointing:\n"
    )
    say("| VAD | " + " | ".join(f"{k} {lv}" for k in kinds for lv in (-45, -30)) + " |")
    say("|---|" + "---|" * (2 * len(kinds)))
    for name, cand in cands.items():
        cells = []
        for kind in kinds:
            nz = noise(kind, n, seed=11)
            for lv in (-45, -30):
                sig = np.concatenate([ac.silence(2.0), ac.at_dbfs(nz, lv)])
                cells.append(f"{count_triggers(cand, sig, seg) * 60 / args.minutes:.0f}")
        say(f"| {name} | " + " | ".join(cells) + " |")
    if args.paced_s > 0 or args.rss:
        mem = rss_table(list(cands)) if args.rss else {}
        room = ac.at_dbfs(ac.noise("pink", 10 * ac.RATE, seed=5), -62)
        say(
            f"\nCost per stream: CPU fed in real time ({args.paced_s:g} s of -62 dBFS pink room noise, "
            f"{IDLE_BATCH} frames per {IDLE_BATCH * 20} ms as the daemon does in silence), % of one core; RSS added by "
            "the front-ends "
            "of 1 and 4 streams (a fresh process each, with the Whisper engine loaded as in the daemon):\n"
        )
        say("| VAD | ms / frame (hot) | CPU % of a core, real time | RSS 1 stream | RSS 4 streams |")
        say("|---|---|---|---|---|")
        for name, cand in cands.items():
            pct = f"{paced_cpu(cand, room, args.paced_s):.2f} %" if args.paced_s > 0 else "-"
            m = mem.get(name, {})
            r1 = f"+{m['one']:.1f} MB" if "one" in m else m.get("error", "-")
            r4 = f"+{m['four']:.1f} MB" if "four" in m else "-"
            say(f"| {name} | {cost[name]:.3f} | {pct} | {r1} | {r4} |")
    if args.write:
        python = os.path.relpath(sys.executable) if not os.path.isabs(sys.argv[0]) else sys.executable
        cmd = "`" + " ".join([python, "-m", "scripts.bench.eval_vad"] + sys.argv[1:]) + "`"
        Path(args.write).write_text(
            f"# VAD evaluation\n\nMeasured {started} with {cmd} (machine shared with other "
            "jobs: CPU figures are noisy).\n\n" + "\n".join(out) + "\n"
        )


if __name__ == "__main__":
    main()
