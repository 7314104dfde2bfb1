"""The wake detector's raw scores, cached once, for sweeping its post-processing offline (issue 24).

The expensive part of scripts/bench/wake.py is running the model; the rule that turns its
probabilities into a detection (mean of a sliding window > cutoff, refractory period) is cheap.
This runs one model over the same audio `make bench-wake` uses and saves every model call's raw
probability (one per 30 ms) with the 20 ms frame it completed in, so that any rule can be tried
on the cache (scripts/bench/wake_rules.py) without running the model again:

- acceptance: every real recording (DIR/<model>/*.wav) x ACCEPT_NOISES x ACCEPT_SNRS, mixed as
  wake_acceptance.acceptance_recorded does, with every frame heard and resting on the front-end's silence;
- false accepts: the same hours as wake_benchmark_real.json (speech 60 min, tv 20 + 40 min with
  seeds 1 and 11, music 20 + 40 min with seeds 2 and 12), every frame heard, and the front-end's
  speech verdict per frame (for rules that look at the VAD);
- false accepts, 4 hours more (--part fa_more): speech with seeds 3-5 and TV with seed 13, 60 min each;
- false accepts, 4 fresh hours (--part fa_fresh): speech with seeds 6-7 and TV with seeds 14-15, kept
  apart to check a setting chosen on the other 7.

    nice -n 19 .venv/bin/python -m scripts.bench.wake_scores --part accept --out /tmp/wake_accept.pkl
    nice -n 19 .venv/bin/python -m scripts.bench.wake_scores --part fa --out /tmp/wake_fa.pkl
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
from pathlib import Path

import numpy as np

from scripts.bench import speech_corpus as sc
from scripts.bench import wake_audio as wa
from scripts.bench import wake_conditions as wc
from scripts.bench import wake_detect as wd
from scripts.bench import wake_false_accepts as wf
from voxnode.wake.detector import WakeDetector
from voxnode.wake.models import load_wake_model
from voxnode.wake.silence import SilenceSkip

# The false-accept hours of wake_benchmark_real.json: (label, source, minutes, seed).
FA_PARTS = [
    ("speech", "speech", 60.0, 0),
    ("tv", "tv", 20.0, 1),
    ("tv_more", "tv", 40.0, 11),
    ("music", "music", 20.0, 2),
    ("music_more", "music", 40.0, 12),
]
# Four hours more, other seeds (--part fa_more): do the false accepts per hour hold beyond those 3?
FA_MORE = [
    ("speech_3", "speech", 60.0, 3),
    ("speech_4", "speech", 60.0, 4),
    ("speech_5", "speech", 60.0, 5),
    ("tv_13", "tv", 60.0, 13),
]
# Four fresh hours (--part fa_fresh, stop 38): never used to choose a setting, only to check one chosen on
# the 7 above (wake_fusion.py reports the chosen settings' false accepts there apart): speech and TV, where
# every false accept so far was (none in 3 hours of music, either band).
FA_FRESH = [
    ("speech_6", "speech", 60.0, 6),
    ("speech_7", "speech", 60.0, 7),
    ("tv_14", "tv", 60.0, 14),
    ("tv_15", "tv", 60.0, 15),
]
FA_HOURS = {"fa": FA_PARTS, "fa_more": FA_MORE, "fa_fresh": FA_FRESH}  # --part


def raw_scores(model: str, audio: np.ndarray, flags: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Every model call's raw probability and the 20 ms frame it completed in (with `flags`, the
    detector rests on silence as wake_detect.detect has it do)."""
    d = WakeDetector(load_wake_model(model, threshold=0.9999), 0)
    probs: list[float] = []
    at: list[int] = []
    k_now = [0]
    for s in d._scorers:  # record each call's newest probability (the window's last entry)
        inner = s.score

        def score(features, inner=inner, s=s):
            out = inner(features)
            probs.append(s._probs[-1])
            at.append(k_now[0])
            return out

        s.score = score  # type: ignore[method-assign]
    pcm = np.clip(np.round(audio), -32768, 32767).astype(np.int16)
    n = (len(pcm) - 320) // 320 + 1
    skip = SilenceSkip() if flags is not None else None
    for k in range(n):
        k_now[0] = k
        frame = pcm[k * 320 : (k + 1) * 320]
        for f in [frame] if skip is None else skip.frames(frame, bool(flags[k])):  # type: ignore[index]
            d.process(f)
    return np.asarray(probs, dtype=np.float32), np.asarray(at, dtype=np.int32)


def accept_part(model: str, folder: Path) -> dict:
    music = [a for _, a in sc.music_tracks()]
    phrases = wa.recordings(folder, model)
    files = sorted((folder / model).glob("*.wav"))
    clips = []
    t0 = time.time()
    for i, x in enumerate(phrases):
        for snr, kind, clip, start, end in wa.recording_trials(i, x, music):
            flags = wd.speech_flags(clip)
            clips.append(
                {
                    "rec": i,
                    "snr": snr,
                    "kind": kind,
                    "start": start,
                    "end": end,
                    "flags": flags,
                    "all_frames": raw_scores(model, clip),
                    "skip_silence": raw_scores(model, clip, flags),
                }
            )
        print(f"{i + 1}/{len(phrases)} recordings, {time.time() - t0:.0f} s", flush=True)
    return {"model": model, "files": [f.name for f in files], "clips": clips}


def fa_part(model: str, parts: list[tuple[str, str, float, int]]) -> dict:
    out = {}
    for label, source, minutes, seed in parts:
        t0 = time.time()
        audio, info = wf.FA_SOURCES[source](minutes, seed)
        flags = wd.speech_flags(audio)
        probs, at = raw_scores(model, audio)
        out[label] = {"hours": len(audio) / wc.RATE / 3600, "info": info, "flags": flags, "all_frames": (probs, at)}
        print(f"{label}: {len(probs)} calls, {time.time() - t0:.0f} s", flush=True)
    return {"model": model, "parts": out, "asterisk_prompts": sc.asterisk_band()}  # wake_fusion.py checks it


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="alexa")
    p.add_argument("--part", choices=("accept", *FA_HOURS), required=True)
    p.add_argument("--recordings", type=Path, default=wa.default_recordings())
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args()
    if args.part == "accept":
        data = accept_part(args.model, args.recordings)
    else:
        data = fa_part(args.model, FA_HOURS[args.part])
    args.out.write_bytes(pickle.dumps(data))
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
