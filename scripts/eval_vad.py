#!/usr/bin/env python3
"""Evaluate frame VADs: precision/recall in noise, false triggers on noise only.

Speech: espeak-ng sentences + pocketsphinx-testdata recordings, separated by
0.5-2 s of silence, labelled per frame by energy on the clean signal; then
white/pink/babble/hvac/music noise mixed in at 0/5/10/20 dB SNR.
False triggers: noise-only audio through front-end + segmenter (default
settings); every utterance that survives onset + minimum-speech is a trigger.

    PYTHONPATH=daemon python scripts/eval_vad.py [--minutes 3] [--markdown]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import audio_corpus as ac  # noqa: E402

from voxnode.config import Config  # noqa: E402
from voxnode.frontend.chain import FrontEnd, FrontEndParams  # noqa: E402
from voxnode.stream.params import frontend_params, segmenter_params  # noqa: E402
from voxnode.stream.segmenter import Chunk, Ended, Segmenter, SegmenterParams  # noqa: E402


def fe(**changes) -> FrontEndParams:
    """The shipped front-end settings ([frontend], [vad] defaults) with `changes`."""
    return dataclasses.replace(frontend_params(Config()), **changes)


# highpass_hz=80 unless named: the shipped default is webrtc-3 with the 150 Hz high-pass.
CANDIDATES = {
    "spectral-0.8": fe(highpass_hz=80, vad_engine="spectral", vad_threshold=0.8),
    "spectral-1.0": fe(highpass_hz=80, vad_engine="spectral", vad_threshold=1.0),
    "spectral-1.5": fe(highpass_hz=80, vad_engine="spectral", vad_threshold=1.5),
    "webrtc-1": fe(highpass_hz=80, vad_engine="webrtc", vad_aggressiveness=1),
    "webrtc-2": fe(highpass_hz=80, vad_engine="webrtc", vad_aggressiveness=2),
    "webrtc-3": fe(highpass_hz=80, vad_engine="webrtc", vad_aggressiveness=3),
    "webrtc-3-hp150": fe(vad_engine="webrtc", vad_aggressiveness=3, highpass_hz=150),
    "spectral-0.8-hp150": fe(vad_engine="spectral", vad_threshold=0.8, highpass_hz=150),
    "both-0.8-2": fe(highpass_hz=80, vad_engine="both", vad_threshold=0.8, vad_aggressiveness=2),
    "both-0.8-3": fe(highpass_hz=80, vad_engine="both", vad_threshold=0.8, vad_aggressiveness=3),
}


def speech_track(seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    parts = [ac.silence(1.0)]
    for clip in ac.espeak_clips() + ac.recorded_clips():
        parts.append(ac.at_dbfs(clip.audio, -26 + rng.uniform(-6, 6)))
        parts.append(ac.silence(rng.uniform(0.5, 2.0)))
    x = np.concatenate(parts)
    x = x[: len(x) // ac.FRAME * ac.FRAME]
    return x, ac.label_speech(x)


def run_frames(params: FrontEndParams, x: np.ndarray) -> tuple[np.ndarray, float]:
    fe = FrontEnd(params)
    n = len(x) // ac.FRAME
    out = np.zeros(n, dtype=bool)
    t0 = time.process_time()
    for i in range(n):
        out[i] = fe.process(x[i * ac.FRAME : (i + 1) * ac.FRAME]).speech
    return out, (time.process_time() - t0) / n * 1e3


def count_triggers(params: FrontEndParams, x: np.ndarray, seg: SegmenterParams) -> int:
    fe = FrontEnd(params)
    s = Segmenter(seg)
    triggers = 0
    for i in range(len(x) // ac.FRAME):
        o = fe.process(x[i * ac.FRAME : (i + 1) * ac.FRAME])
        for ev in s.push(Chunk(o.samples, i, i * 0.02, i * 0.02, o.speech, o.level_db)):
            triggers += isinstance(ev, Ended)
    triggers += sum(isinstance(ev, Ended) for ev in s.flush())
    return triggers


def prf(pred: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    tp = float(np.sum(pred & truth))
    p = tp / max(1.0, float(np.sum(pred)))
    r = tp / max(1.0, float(np.sum(truth)))
    return p, r


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=3.0, help="noise-only minutes per kind")
    ap.add_argument("--snrs", default="0,5,10,20")
    ap.add_argument("--only", default="", help="comma list of candidates")
    ap.add_argument("--noises", default=",".join(ac.NOISES))
    args = ap.parse_args()
    cands = {k: v for k, v in CANDIDATES.items() if not args.only or k in args.only.split(",")}
    snrs = [float(s) for s in args.snrs.split(",")]
    x, truth = speech_track()
    print(f"speech track {len(x) / ac.RATE:.0f} s, {truth.mean() * 100:.0f} % speech frames")
    rows = []
    cost = {}
    for name, params in cands.items():
        pred, ms = run_frames(params, x)
        cost[name] = ms
        p, r = prf(pred, truth)
        rows.append((name, "clean", "-", p, r))
    kinds = args.noises.split(",")
    for kind in kinds:
        nz = ac.noise(kind, len(x), seed=7)
        for snr in snrs:
            mixed = ac.mix(x, nz, snr, truth)
            for name, params in cands.items():
                pred, _ = run_frames(params, mixed)
                p, r = prf(pred, truth)
                rows.append((name, kind, f"{snr:g}", p, r))
    print("\n| VAD | noise | SNR dB | precision | recall | F1 |\n|---|---|---|---|---|---|")
    for name, kind, snr, p, r in rows:
        f1 = 2 * p * r / max(1e-9, p + r)
        print(f"| {name} | {kind} | {snr} | {p:.3f} | {r:.3f} | {f1:.3f} |")
    print("\nMean F1 over noisy conditions:")
    for name in cands:
        f1s = [2 * p * r / max(1e-9, p + r) for n, k, s, p, r in rows if n == name and k != "clean"]
        print(f"  {name}: {np.mean(f1s):.3f}   (CPU {cost[name]:.3f} ms/frame)")
    seg = segmenter_params(Config())
    n = int(args.minutes * 60 * ac.RATE)
    print(
        f"\nFalse triggers per hour on noise only ({args.minutes:g} min per kind and level, "
        "after 2 s of digital silence, then noise):"
    )
    print("| VAD | " + " | ".join(f"{k} {lv}" for k in kinds for lv in (-45, -30)) + " |")
    print("|---|" + "---|" * (2 * len(kinds)))
    for name, params in cands.items():
        cells = []
        for kind in kinds:
            nz = ac.noise(kind, n, seed=11)
            for lv in (-45, -30):
                sig = np.concatenate([ac.silence(2.0), ac.at_dbfs(nz, lv)])
                t = count_triggers(params, sig, seg)
                cells.append(f"{t * 60 / args.minutes:.0f}")
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
