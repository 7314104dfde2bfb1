"""openWakeWord's alexa probabilities, cached for the same trials as wake_scores.py (issue 24).

The same clips (every real recording x ACCEPT_NOISES x ACCEPT_SNRS, mixed by
wake_audio.recording_in_noise with the same clip ids, so the same noise draws) and the same
false-accept hours (wake_scores.FA_HOURS: FA_PARTS; FA_MORE with --part fa_more; FA_FRESH, kept
apart to check a chosen setting, with --part fa_fresh), scored by scripts/bench/wake_oww.py's pipeline
on every 80 ms; each probability with the 20 ms frame it is known after, so that wake_fusion.py can
line it up with microWakeWord's. The process CPU time of the scoring alone is saved per part (the
cost of running openWakeWord on every frame).

    nice -n 19 .venv-bench/bin/python -m scripts.bench.wake_oww_scores --part accept --out /tmp/oww_accept.pkl
    nice -n 19 .venv-bench/bin/python -m scripts.bench.wake_oww_scores --part fa --out /tmp/oww_fa.pkl
    nice -n 19 .venv-bench/bin/python -m scripts.bench.wake_oww_scores --part fa_more --out /tmp/oww_fa_more.pkl
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
from scripts.bench import wake_false_accepts as wf
from scripts.bench.wake_oww import OwwScorer
from scripts.bench.wake_scores import FA_HOURS

HOUR_BLOCK_S = 600  # the false-accept hours are scored in 10-minute blocks (memory), with the context carried


def accept_part(scorer: OwwScorer, folder: Path, shard: tuple[int, int] = (0, 1)) -> dict:
    music = [a for _, a in sc.music_tracks()]
    phrases = wa.recordings(folder, "alexa")
    files = sorted((folder / "alexa").glob("*.wav"))
    clips = []
    cpu = 0.0
    audio_s = 0.0
    t0 = time.time()
    for i, x in enumerate(phrases):
        if i % shard[1] != shard[0]:
            continue
        for snr, kind, clip, start, end in wa.recording_trials(i, x, music):
            c0 = time.process_time()
            probs, at = scorer.probabilities(clip)
            cpu += time.process_time() - c0
            audio_s += len(clip) / wc.RATE
            clips.append({"rec": i, "snr": snr, "kind": kind, "start": start, "end": end, "oww": (probs, at)})
        print(f"{i + 1}/{len(phrases)} recordings, {time.time() - t0:.0f} s", flush=True)
    return {"files": [f.name for f in files], "clips": clips, "cpu_s": cpu, "audio_s": audio_s}


def long_scores(scorer: OwwScorer, audio: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A long signal in blocks of whole chunks; each block scored with the 3 s before it as context (more
    than any probability reads: 15 embeddings + 76 mel frames + 480 samples = 2.0 s), so the
    probabilities are those of one uninterrupted stream."""
    block = HOUR_BLOCK_S * wc.RATE // 1280 * 1280
    ctx = 3 * wc.RATE // 1280 * 1280
    ps, ats = [], []
    for b0 in range(0, len(audio), block):
        lo = max(0, b0 - ctx)
        p, at = scorer.probabilities(audio[lo : b0 + block])
        at = at + lo // 320
        keep = at >= b0 // 320 + 3 if b0 else np.ones(len(at), bool)
        ps.append(p[keep])
        ats.append(at[keep])
    return np.concatenate(ps), np.concatenate(ats)


def fa_part(scorer: OwwScorer, parts: list[tuple[str, str, float, int]]) -> dict:
    out = {}
    for label, source, minutes, seed in parts:
        t0 = time.time()
        audio, _ = wf.FA_SOURCES[source](minutes, seed)
        c0 = time.process_time()
        probs, at = long_scores(scorer, audio)
        cpu = time.process_time() - c0
        out[label] = {"hours": len(audio) / wc.RATE / 3600, "oww": (probs, at), "cpu_s": cpu}
        print(f"{label}: {len(probs)} probabilities, {cpu:.0f} s CPU, {time.time() - t0:.0f} s", flush=True)
    return {"parts": out, "asterisk_prompts": sc.asterisk_band()}  # wake_fusion.py checks it


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--part", choices=("accept", *FA_HOURS), required=True)
    p.add_argument("--recordings", type=Path, default=wa.default_recordings())
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--shard", default="0/1", help="i/n: only the recordings i, i + n, ... (processes side by side)")
    args = p.parse_args()
    i, n = (int(v) for v in args.shard.split("/"))
    scorer = OwwScorer()
    if args.part == "accept":
        data = accept_part(scorer, args.recordings, (i, n))
    else:
        data = fa_part(scorer, FA_HOURS[args.part])
    data["delegation"] = {k: [d.applied, d.ops_total, list(d.not_delegated)] for k, d in scorer.delegation.items()}
    args.out.write_bytes(pickle.dumps(data))
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
