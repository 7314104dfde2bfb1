"""Whisper as the wake word's second opinion: what tiny.en says over each detection (issue 24).

The detector (microWakeWord) fires on words that sound like "alexa" ("We're sorry", "left brace",
"Hold time"); Whisper, which the node loads anyway, writes those words as they are. This runs the
detector over the acceptance trials (the 165 real recordings x ACCEPT_NOISES x SNRs, resting on the
front-end's silence as the daemon does) and the false-accept hours, takes every detection at each
cutoff of CUTOFFS, and has tiny.en transcribe the audio around it (LEAD_S before, TAIL_S after), plain
and with the word as a hotword. It saves every detection's texts, so that any rule on the text can be
scored offline (`--score`).

    nice -n 19 .venv-bench/bin/python -m scripts.bench.wake_whisper --part accept --jobs 2 --out /tmp/ww_accept.json
    nice -n 19 .venv-bench/bin/python -m scripts.bench.wake_whisper --part fa --out /tmp/ww_fa.json
    .venv-bench/bin/python -m scripts.bench.wake_whisper --score /tmp/ww_fa.json /tmp/ww_accept*.json \
        --write scripts/bench/results/wake_whisper.json

`--score` prints, per detector cutoff, the % of trials heard at each SNR (each draw of the noise, and their
mean) and the false accepts in the 7 hours and in the 4 fresh ones, for the detector alone, Whisper plain and
Whisper with the hotword, as the daemon decides (voxnode.wake.whisper_check.heard).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
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
from voxnode.wake.whisper_check import LEAD_S, TAIL_S  # the daemon's: the audio around a detection it checks

CUTOFFS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
SAME_S = 0.3
SNRS = (20, 10, 5, 0)

_ENGINE = None
_SHARED: dict = {}


def engine():
    global _ENGINE
    if _ENGINE is None:
        from voxnode.asr import default_model_dir
        from voxnode.asr.whisper.engine import WhisperEngine

        _ENGINE = WhisperEngine.load(default_model_dir(None, "tiny.en"), 1)
    return _ENGINE


def window(audio: np.ndarray, t: float, tail: float = TAIL_S) -> np.ndarray:
    """What the check hears of a detection at `t` s in `audio` (int16 scale): LEAD_S before, `tail` after."""
    a = max(0, int((t - LEAD_S) * wc.RATE))
    b = min(len(audio), int((t + tail) * wc.RATE))
    return audio[a:b].astype(np.float32) / 32768.0


def texts(audio: np.ndarray, t: float) -> dict:
    """tiny.en's text of the audio around a detection at `t` s (`window`), plain and with the hotword."""
    x = window(audio, t, _SHARED.get("tail", TAIL_S))
    eng = engine()
    plain = eng.transcribe(x, role="partial", prompt="", hotwords=())
    hot = eng.transcribe(x, role="partial", prompt="", hotwords=("Alexa",))
    return {"plain": plain.text, "hot": hot.text}


def heard_by_whisper(audio: np.ndarray, t: float, model) -> bool:
    """The daemon's check of a detection at `t` s in `audio` (int16 scale): Whisper with the hotword, the rule."""
    from voxnode.wake import whisper_check

    x = window(audio, t)
    text = engine().transcribe(x, role="partial", prompt="", hotwords=whisper_check.hotwords(model)).text
    return whisper_check.heard(text, model)


def detections(series: np.ndarray, audio: np.ndarray, lo: float = 0.0, hi: float = float("inf")) -> list[dict]:
    """Every cutoff's detections in [lo, hi] s, each with its texts (one decode per word)."""
    out: dict[float, dict] = {}
    for c in CUTOFFS:
        for t in wd.events(series, c):
            if lo <= t <= hi:
                # a cutoff's detection within SAME_S of another's is the same word: its texts are reused
                row = next((r for at, r in out.items() if abs(at - t) <= SAME_S), None)
                if row is None:
                    row = out[t] = {
                        "t": t,
                        "peak": round(float(series[int(t / 0.02) - 1]), 4),
                        "cutoffs": [],
                        **texts(audio, t),
                    }
                row["cutoffs"].append(c)
    return sorted(out.values(), key=lambda r: r["t"])


def _trials(i: int) -> list[dict]:
    rec = _SHARED["recs"][i]
    rows = []
    for snr, kind, clip, start, end in wa.recording_trials(i, rec, _SHARED["music"], _SHARED["draw"]):
        if snr not in _SHARED["snrs"]:
            continue
        series = wd.detect("alexa", clip, flags=wd.speech_flags(clip)).series
        peak = float(series[int(start / 0.02) : int((end + wc.LATE_S) / 0.02)].max())
        rows.append(
            {
                "file": _SHARED["files"][i],
                "kind": kind,
                "snr": snr,
                "peak": round(peak, 4),
                "detections": detections(series, clip, start, end + wc.LATE_S),
            }
        )
    return rows


def each_recording(folder: Path, jobs: int, trials, **shared) -> list[dict]:
    """`trials(i)`'s rows for every alexa recording, in `jobs` processes (forked: they share _SHARED)."""
    recs = wa.recordings(folder, "alexa")
    files = sorted(p.name for p in (folder / "alexa").glob("*.wav"))
    _SHARED.update(recs=recs, files=files, music=[a for _, a in sc.music_tracks()], **shared)
    out: list[dict] = []
    t0 = time.time()
    with multiprocessing.get_context("fork").Pool(jobs) if jobs > 1 else contextlib.nullcontext() as pool:
        it = pool.imap(trials, range(len(recs))) if pool else map(trials, range(len(recs)))
        for i, rows in enumerate(it):
            out += rows
            if (i + 1) % 15 == 0:
                print(f"{i + 1}/{len(recs)} recordings, {time.time() - t0:.0f} s", flush=True)
    return out


def accept(folder: Path, jobs: int, snrs: tuple[int, ...], draw: int = 0) -> list[dict]:
    return each_recording(folder, jobs, _trials, snrs=snrs, draw=draw)


class CheckOnly:
    """What StreamPipeline uses of the decode scheduler, for `--part daemon`: a wake word's check is decoded
    at once on the real engine (the daemon's decode thread would, ~60 ms later); transcripts are not decoded
    (not what is measured)."""

    def __init__(self) -> None:
        self.checks = 0

    def submit(self, job) -> None:
        from voxnode.stream.jobs import JobKind, JobOutcome

        if job.kind == JobKind.WAKE:
            self.checks += 1
            job.on_done(
                job,
                JobOutcome.DONE,
                engine().transcribe(job.audio, role="partial", prompt=job.prompt, hotwords=job.hotwords),
            )

    def cancel(self, job) -> None:
        from voxnode.stream.jobs import JobOutcome

        job.cancelled = True
        job.on_done(job, JobOutcome.CANCELLED, None)

    def promote(self, job) -> bool:
        return True

    def hold_partials(self, stream: str, hold: bool) -> None:
        pass


def _daemon_trials(i: int) -> list[dict]:
    """The i-th recording's trials through the daemon's own pipeline (front-end, gate resting on silence,
    detector at the default config's cutoff, the check): when its Wake word events came."""
    from voxnode.config import parse_config
    from voxnode.stream.params import pipeline_params, wake_params
    from voxnode.stream.pipeline import StreamPipeline
    from voxnode.stream.wake_gate import WakeGate

    config = parse_config('[wake]\nenabled = true\nmodel = "alexa"\n' + _SHARED["extra"])
    rows = []
    for snr, kind, clip, start, end in wa.recording_trials(i, _SHARED["recs"][i], _SHARED["music"], _SHARED["draw"]):
        if snr not in _SHARED["snrs"]:
            continue
        events: list = []
        sched = CheckOnly()
        pipe = StreamPipeline(
            "mic", pipeline_params(config), sched, events.append, wake=WakeGate(wake_params(config, "mic"))
        )
        pcm = np.clip(np.round(clip), -32768, 32767).astype(np.int16)
        for k in range(len(pcm) // 320):
            t = k * 0.02
            pipe.feed(pcm[k * 320 : (k + 1) * 320], k, t, t)
        pipe.flush()
        wakes = [round(e.time, 2) for e in events if type(e).__name__ == "WakeEvent"]
        rows.append(
            {
                "file": _SHARED["files"][i],
                "kind": kind,
                "snr": snr,
                "wakes": wakes,
                "checks": sched.checks,
                "heard": any(start <= t <= end + wc.LATE_S for t in wakes),
            }
        )
    return rows


def daemon(folder: Path, jobs: int, snrs: tuple[int, ...], draw: int, extra: str) -> dict:
    """% of trials heard per SNR by the daemon's pipeline (`extra`: more config, e.g. 'confirm = ""')."""
    rows = each_recording(folder, jobs, _daemon_trials, snrs=snrs, draw=draw, extra=extra)
    percent = {
        str(snr): round(100 * sum(r["heard"] for r in rows if r["snr"] == snr) / sum(r["snr"] == snr for r in rows), 1)
        for snr in snrs
    }
    print("daemon", json.dumps(percent), flush=True)
    return {"percent_by_snr": percent, "config": extra, "trials": rows}


def _fa_part(part: tuple[str, str, float, int]) -> dict:
    label, source, minutes, seed = part
    audio, _ = wf.FA_SOURCES[source](minutes, seed)
    series = wd.detect("alexa", audio).series
    rows = detections(series, audio)
    print(label, len(rows), "detections", flush=True)
    return {
        "label": label,
        "hours": round(len(audio) / wc.RATE / 3600, 3),
        "fresh": part in FA_FRESH,
        "detections": rows,
    }


def fa(jobs: int) -> list[dict]:
    parts = FA_PARTS + FA_MORE + FA_FRESH
    with multiprocessing.get_context("fork").Pool(jobs) if jobs > 1 else contextlib.nullcontext() as pool:
        return list(pool.imap(_fa_part, parts) if pool else map(_fa_part, parts))


def score(fa_file: Path, accept_files: list[Path]) -> dict:
    """Per cutoff and rule: % heard per SNR and draw (and the mean over draws), false accepts per part of the hours."""
    from voxnode.wake import whisper_check
    from voxnode.wake.models import load_wake_model

    alexa = load_wake_model("alexa")
    rules = {
        "alone": lambda d: True,
        "whisper": lambda d: whisper_check.heard(d["plain"], alexa),
        "whisper_hotword": lambda d: whisper_check.heard(d["hot"], alexa),
    }
    fa = json.loads(fa_file.read_text())["parts"]
    runs = [json.loads(f.read_text()) for f in accept_files]
    out: dict = {"fa_file": str(fa_file), "accept_files": [str(f) for f in accept_files], "cutoffs": {}}
    for c in CUTOFFS:
        row: dict = {}
        for name, ok in rules.items():
            heard: dict = {}
            for run in runs:
                for snr in sorted({t["snr"] for t in run["trials"]}, reverse=True):
                    trials = [t for t in run["trials"] if t["snr"] == snr]
                    n = sum(any(c in d["cutoffs"] and ok(d) for d in t["detections"]) for t in trials)
                    heard.setdefault(str(snr), []).append(round(100 * n / len(trials), 1))
            fas = {}
            for fresh in (False, True):
                parts = [p for p in fa if p["fresh"] == fresh]
                fas["fresh" if fresh else "chosen_on"] = {
                    "hours": round(sum(p["hours"] for p in parts), 2),
                    "false_accepts": sum(ok(d) for p in parts for d in p["detections"] if c in d["cutoffs"]),
                }
            row[name] = {
                "percent_by_snr_per_draw": heard,
                "mean_percent_by_snr": {k: round(sum(v) / len(v), 1) for k, v in heard.items()},
                "false_accepts": fas,
                "checks_per_hour": round(
                    sum(1 for p in fa for d in p["detections"] if c in d["cutoffs"]) / sum(p["hours"] for p in fa), 1
                ),
            }
            print(c, name, json.dumps(row[name]["mean_percent_by_snr"]), json.dumps(fas), flush=True)
        out["cutoffs"][str(c)] = row
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--part", choices=("accept", "fa", "daemon"))
    p.add_argument("--config", default="", help="--part daemon: more of [wake], e.g. 'confirm = \"\"'")
    p.add_argument("--score", type=Path, nargs="+", metavar="JSON", help="the --part fa JSON, then --part accept JSONs")
    p.add_argument("--write", type=Path, help="with --score: where the scores go")
    p.add_argument("--recordings", type=Path, default=wa.default_recordings())
    p.add_argument("--snrs", type=int, nargs="+", default=list(SNRS))
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument(
        "--draw", type=int, default=0, help="the acceptance's draw of the noise (wake_conditions.NOISE_SEED_STEP)"
    )
    p.add_argument("--tail", type=float, default=TAIL_S, help="seconds of audio after the detection Whisper hears")
    p.add_argument("--out", type=Path)
    args = p.parse_args()
    if args.score:
        scored = {"command": command_line(), **score(args.score[0], args.score[1:])}
        if args.write:
            args.write.write_text(json.dumps(scored, indent=1) + "\n")
        return 0
    _SHARED["tail"] = args.tail
    t0 = time.time()
    out = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "command": command_line(),
        "asterisk_prompts": sc.asterisk_band(),
        "lead_s": LEAD_S,
        "tail_s": args.tail,
    }
    if args.part == "daemon":
        out["daemon"] = daemon(args.recordings, args.jobs, tuple(args.snrs), args.draw, args.config)
    elif args.part == "accept":
        out["trials"] = accept(args.recordings, args.jobs, tuple(args.snrs), args.draw)
        out["draw"] = args.draw
    else:
        out["parts"] = fa(args.jobs)
    out["wall_s"] = round(time.time() - t0)
    if args.out:
        args.out.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
