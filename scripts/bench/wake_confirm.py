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

In `.venv-bench` (as `make bench-wake` since stop 37) the g722 package gives the false-accept hours' Asterisk
prompts at 16 kHz (wideband: wake_confirm_wideband.json); `.venv` upsamples their 8 kHz WAVs (narrowband:
wake_confirm.json). The results record which (`asterisk_prompts`; docs/benchmarks.md#wake-word).
"""

from __future__ import annotations

import argparse
import json
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


def acceptance(folder: Path, variants: tuple[str, ...] = VARIANTS) -> dict:
    music = [a for _, a in sc.music_tracks()]
    phrases = wa.recordings(folder, "alexa")
    hits = {v: {} for v in variants}  # variant -> "kind snr" -> count
    t0 = time.time()
    for i, x in enumerate(phrases):
        for snr, kind, clip, start, end in wa.recording_trials(i, x, music):
            flags = wd.speech_flags(clip)
            for v in variants:
                times, _, _ = run(clip, v, flags)
                hit = any(start <= t <= end + wc.LATE_S for t in times)
                key = f"{kind} {snr}"
                hits[v][key] = hits[v].get(key, 0) + hit
        if (i + 1) % 15 == 0:
            print(f"{i + 1}/{len(phrases)} recordings, {time.time() - t0:.0f} s", flush=True)
    n = len(phrases)
    out = {}
    for v in variants:
        by = hits[v]
        out[v] = {
            "percent_by_snr": {
                str(s): round(100 * sum(by[f"{k} {s}"] for k in wc.ACCEPT_NOISES) / (4 * n), 1) for s in wc.ACCEPT_SNRS
            },
            "percent_by_condition": {key: round(100 * c / n, 1) for key, c in by.items()},
        }
        print(v, json.dumps(out[v]["percent_by_snr"]), flush=True)
    return {"recordings": n, **out}


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
    if not args.no_accept:
        out["acceptance"] = acceptance(args.recordings, tuple(args.variants))
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
