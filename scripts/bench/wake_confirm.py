"""The daemon's alexa detector with and without `wake.confirm = "openwakeword"`, end to end (issue 24).

wake_fusion.py chose the second opinion on cached scores; this runs the daemon's own WakeDetector
(voxnode/wake/detector.py with confirm.SecondOpinion, at the shipped cutoff, the 2 s refractory
period, resting on the front-end's silence as wake.skip_silence has it) on the same audio:

- acceptance: the 165 real recordings x pink/babble/HVAC/music x 20/10/5/0 dB (wake_scores.py's
  clips and noise draws);
- false accepts: the bench's 3 hours (speech, TV, music) and, with --more, the 4 hours more of
  wake_scores.FA_MORE, every frame heard; with --fresh, FA_FRESH's 4 hours, summed apart (no setting
  was chosen on them);
- CPU: the detector's process CPU time over the false-accept audio, and how often openWakeWord ran.

    nice -n 19 .venv/bin/python -m scripts.bench.wake_confirm --more --write scripts/bench/results/wake_confirm.json

or in two processes side by side (the acceptance, then the false accepts with it merged in):

    nice -n 19 .venv/bin/python -m scripts.bench.wake_confirm --no-fa --write /tmp/confirm_accept.json
    nice -n 19 .venv/bin/python -m scripts.bench.wake_confirm --no-accept --more --merge /tmp/confirm_accept.json \
        --write scripts/bench/results/wake_confirm.json

With --draws N the acceptance is measured over N draws of the noise (the record's, then N - 1 others:
wake_conditions.NOISE_SEED_STEP), each reported, with their mean and range (stop 43; wake_draws.json):

    nice -n 19 .venv-bench/bin/python -m scripts.bench.wake_confirm --no-fa --draws 5 --jobs 2 --write /tmp/draws.json

In `.venv-bench` (as `make bench-wake` since stop 37) the g722 package gives the false-accept hours' Asterisk
prompts at 16 kHz (wideband: wake_confirm_wideband.json); `.venv` upsamples their 8 kHz WAVs (narrowband:
wake_confirm.json). The results record which (`asterisk_prompts`; docs/benchmarks.md#wake-word).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import platform
import sys
import time
from pathlib import Path

import numpy as np

from scripts import command_line
from scripts.bench import speech_corpus as sc
from scripts.bench import wake_audio as wa
from scripts.bench import wake_conditions as wc
from scripts.bench import wake_detect as wd
from scripts.bench import wake_false_accepts as wf
from scripts.bench.wake_scores import FA_FRESH, FA_MORE, FA_PARTS
from voxnode.wake.confirm import SecondOpinion, with_second_opinion
from voxnode.wake.detector import WakeDetector
from voxnode.wake.models import load_wake_model
from voxnode.wake.silence import SilenceSkip

VARIANTS = ("shipped", "confirm")
TARGETS_PERCENT = {10: 95.0, 5: 85.0}  # issue 24's acceptance targets for alexa, by SNR


def run(audio: np.ndarray, variant: str, flags: np.ndarray | None = None) -> tuple[list[float], float, int]:
    """Detection times (s), process CPU time and openWakeWord requests of one detector over `audio`."""
    second = SecondOpinion() if variant == "confirm" else None
    models = (load_wake_model("alexa"),)
    d = WakeDetector(with_second_opinion(models, 0.0) if second else models, wc.REFRACTORY_MS, second=second)
    pcm = np.clip(np.round(audio), -32768, 32767).astype(np.int16)
    n = (len(pcm) - 320) // 320 + 1
    skip = SilenceSkip() if flags is not None else None
    times = []
    t0 = time.process_time()
    for k in range(n):
        frame = pcm[k * 320 : (k + 1) * 320]
        for f in [frame] if skip is None else skip.frames(frame, bool(flags[k])):  # type: ignore[index]
            if d.process(f) is not None:
                times.append((k + 1) * 0.02)
    return times, time.process_time() - t0, second.requests if second else 0


_TRIALS: dict = {}  # what the workers of one acceptance() share: recordings, music, variants, draw


def _recording_hits(i: int) -> list[tuple[str, str, float, bool]]:
    """(variant, noise, SNR, accepted) for each trial of the i-th recording."""
    shared = _TRIALS
    out = []
    for snr, kind, clip, start, end in wa.recording_trials(i, shared["phrases"][i], shared["music"], shared["draw"]):
        flags = wd.speech_flags(clip)
        for v in shared["variants"]:
            times, _, _ = run(clip, v, flags)
            out.append((v, kind, snr, any(start <= t <= end + wc.LATE_S for t in times)))
    return out


def acceptance(folder: Path, variants: tuple[str, ...] = VARIANTS, draw: int = 0, jobs: int = 1) -> dict:
    """Per variant: % accepted by SNR and by condition, trials accepted by SNR (of 4 x recordings), and
    the trials missed ([file, noise, SNR]); `draw` k > 0: the k-th other draw of every noise; `jobs`
    processes, each a recording at a time (the same trials and results as one)."""
    phrases = wa.recordings(folder, "alexa")
    files = sorted(p.name for p in (folder / "alexa").glob("*.wav"))
    if len(files) != len(phrases):  # recordings() skips a file with no speech: the names would not line up
        raise SystemExit(f"{folder / 'alexa'}: {len(files) - len(phrases)} file(s) without speech")
    _TRIALS.update(phrases=phrases, music=[a for _, a in sc.music_tracks()], variants=variants, draw=draw)
    hits = {v: {} for v in variants}  # variant -> "kind snr" -> count
    missed: dict[str, list] = {v: [] for v in variants}
    t0 = time.time()
    with multiprocessing.get_context("fork").Pool(jobs) if jobs > 1 else contextlib.nullcontext() as pool:
        results = pool.imap(_recording_hits, range(len(phrases))) if pool else map(_recording_hits, range(len(phrases)))
        for i, trials in enumerate(results):
            for v, kind, snr, hit in trials:
                key = f"{kind} {snr}"
                hits[v][key] = hits[v].get(key, 0) + hit
                if not hit:
                    missed[v].append([files[i], kind, snr])
            if (i + 1) % 15 == 0:
                print(f"draw {draw}: {i + 1}/{len(phrases)} recordings, {time.time() - t0:.0f} s", flush=True)
    n = len(phrases)
    out = {}
    for v in variants:
        by = hits[v]
        out[v] = {
            "percent_by_snr": {
                str(s): round(100 * sum(by[f"{k} {s}"] for k in wc.ACCEPT_NOISES) / (4 * n), 1) for s in wc.ACCEPT_SNRS
            },
            "percent_by_condition": {key: round(100 * c / n, 1) for key, c in by.items()},
            "accepted_by_snr": {str(s): sum(by[f"{k} {s}"] for k in wc.ACCEPT_NOISES) for s in wc.ACCEPT_SNRS},
            "missed": missed[v],
        }
        print(f"draw {draw}", v, json.dumps(out[v]["percent_by_snr"]), flush=True)
    return {"recordings": n, "draw": draw, **out}


def over_draws(runs: list[dict], variants: tuple[str, ...]) -> dict:
    """Per variant and SNR: trials accepted in each draw (of 4 x recordings), their mean and range, in
    trials and %, and how many trials the mean lacks of TARGETS_PERCENT (0 where it is met)."""
    out: dict = {}
    trials = len(wc.ACCEPT_NOISES) * runs[0]["recordings"]  # per SNR in each draw
    for v in variants:
        out[v] = {}
        for s in wc.ACCEPT_SNRS:
            counts = [r[v]["accepted_by_snr"][str(s)] for r in runs]
            mean = sum(counts) / len(counts)
            row = {
                "trials": trials,
                "accepted": counts,
                "percent": [round(100 * c / trials, 1) for c in counts],
                "mean": round(mean, 1),
                "mean_percent": round(100 * mean / trials, 2),
                "range_percent": [round(100 * min(counts) / trials, 1), round(100 * max(counts) / trials, 1)],
            }
            if s in TARGETS_PERCENT:
                row["target_percent"] = TARGETS_PERCENT[s]
                row["mean_short_by_trials"] = round(max(0.0, TARGETS_PERCENT[s] * trials / 100 - mean), 1)
            out[v][str(s)] = row
        out[v]["often_missed_10dB"] = often_missed(runs, v, 10)
    return out


def often_missed(runs: list[dict], variant: str, snr: int) -> dict:
    """The recordings `variant` misses at `snr` in more than half of the draws: per file, the trials
    missed in each draw (of the 4 noises) and in how many draws each noise was missed."""
    per: dict[str, dict] = {}
    for k, r in enumerate(runs):
        for name, kind, s in r[variant]["missed"]:
            if s == snr:
                row = per.setdefault(name, {"missed_per_draw": [0] * len(runs), "draws_missed_by_noise": {}})
                row["missed_per_draw"][k] += 1
                row["draws_missed_by_noise"][kind] = row["draws_missed_by_noise"].get(kind, 0) + 1
    return {
        name: row
        for name, row in sorted(per.items(), key=lambda item: (-sum(item[1]["missed_per_draw"]), item[0]))
        if 2 * sum(1 for m in row["missed_per_draw"] if m) > len(runs)
    }


def false_accepts(parts: list[tuple[str, str, float, int]], variants: tuple[str, ...] = VARIANTS) -> dict:
    out: dict = {}
    for label, source, minutes, seed in parts:
        audio, _ = wf.FA_SOURCES[source](minutes, seed)
        hours = len(audio) / wc.RATE / 3600
        out[label] = {"hours": round(hours, 3)}
        for v in variants:
            times, cpu, requests = run(audio, v)
            out[label][v] = {
                "false_accepts": len(times),
                "at_s": [round(t, 1) for t in times],
                "cpu_percent": round(100 * cpu / (hours * 3600), 3),
                "oww_requests_per_hour": round(requests / hours, 1),
            }
        print(label, json.dumps(out[label]), flush=True)
    return out


def summary(fa: dict, variants: tuple[str, ...]) -> dict:
    hours = sum(part["hours"] for part in fa.values())
    return {
        v: {
            "false_accepts": sum(part[v]["false_accepts"] for part in fa.values()),
            "hours": round(hours, 2),
            "cpu_percent": round(sum(part[v]["cpu_percent"] * part["hours"] for part in fa.values()) / hours, 3),
            "oww_requests_per_hour": round(
                sum(part[v]["oww_requests_per_hour"] * part["hours"] for part in fa.values()) / hours, 1
            ),
        }
        for v in variants
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--recordings", type=Path, default=wa.default_recordings())
    p.add_argument("--more", action="store_true", help="also the 4 hours more (wake_scores.FA_MORE)")
    p.add_argument("--fresh", action="store_true", help="also the 4 fresh hours (wake_scores.FA_FRESH), summed apart")
    p.add_argument("--no-accept", action="store_true")
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS, help="default: both")
    p.add_argument("--no-fa", action="store_true")
    p.add_argument(
        "--draws",
        type=int,
        default=1,
        help="the acceptance over N draws of the noise: the record's (0) and 1..N-1 (wake_conditions.NOISE_SEED_STEP)",
    )
    p.add_argument("--jobs", type=int, default=1, help="processes for the acceptance (default 1)")
    p.add_argument("--report", type=Path, help="a --draws run's JSON: its figures over the draws computed again")
    p.add_argument("--merge", type=Path, help="a --no-fa run's JSON: its acceptance goes into this one's")
    p.add_argument("--write", type=Path)
    args = p.parse_args()
    t0 = time.time()
    out: dict = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "command": command_line(),
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "asterisk_prompts": sc.asterisk_band(),  # "wideband" in .venv-bench (G.722), "narrowband" in .venv
    }
    if args.report:
        out = json.loads(args.report.read_text())
        runs = [out["acceptance"], *out.get("acceptance_draws", [])]
        out["over_draws"] = over_draws(runs, tuple(v for v in VARIANTS if v in runs[0]))
        out["over_draws_command"] = command_line()
        print(json.dumps(out["over_draws"]))
        if args.write:
            args.write.write_text(json.dumps(out, indent=1) + "\n")
        return 0
    if args.draws < 1:
        raise SystemExit(f"--draws {args.draws}: at least 1 (the record's draw of the noise)")
    if not args.no_accept:
        runs = [acceptance(args.recordings, tuple(args.variants), k, args.jobs) for k in range(args.draws)]
        out["acceptance"] = runs[0]
        if args.draws > 1:
            out["acceptance_draws"] = runs[1:]
            out["over_draws"] = over_draws(runs, tuple(args.variants))
            print("over_draws", json.dumps(out["over_draws"]), flush=True)
    if args.merge:
        out["acceptance"] = json.loads(args.merge.read_text())["acceptance"]
    if args.no_fa:
        if args.write:
            args.write.write_text(json.dumps(out, indent=1) + "\n")
        return 0
    fresh = FA_FRESH if args.fresh else []
    out["false_accepts"] = false_accepts(FA_PARTS + (FA_MORE if args.more else []) + fresh, tuple(args.variants))
    for key, which in (("summary", False), ("summary_fresh", True)):
        fa = {k: part for k, part in out["false_accepts"].items() if (k in {f[0] for f in fresh}) == which}
        if fa:
            out[key] = summary(fa, tuple(args.variants))
            print(key, json.dumps(out[key]))
    out["wall_s"] = round(time.time() - t0)
    if args.write:
        args.write.write_text(json.dumps(out, indent=1) + "\n")
        print(f"written to {args.write}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
