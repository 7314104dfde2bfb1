"""Does the wake bench's cut of each real recording to its words change what is heard? (issue 24)

scripts/bench/wake.py cuts every recording to its words (audio_corpus.label_speech: the frames
within 35 dB of the file's 99th-percentile frame) before mixing it into the noise. In a room the
detector hears what came before the word, so this caches the model's raw scores (as
wake_scores.py) for the same 165 x 4 noises x 4 SNRs, plus each recording with no noise at all,
with the recording cut five ways (VARIANTS): to its words as the bench does, with 0.1/0.2/0.3 s of
the recording's own audio kept on each side, and whole. For a fair comparison every variant of a
trial has the same noise (same seed and length) and the words at the same place in it: the
noise's length and the words' place are those of the whole file (its head follows the 2-2.8 s of
noise alone), and the SNR is over the words' frames in every variant (the margin's room noise
does not lower the noise added). A detection counts from the whole file's start to LATE_S after
the words' end. `--report` replays the shipped rule (mean of 5 at 0.95) on the caches.

    nice -n 19 .venv/bin/python -m scripts.bench.wake_trim --variant trim --out /tmp/trim_trim.pkl
    nice -n 19 .venv/bin/python -m scripts.bench.wake_trim --report /tmp/trim_*.pkl \\
        --write scripts/bench/results/wake_trim.json
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from pathlib import Path

import numpy as np

from scripts import command_line
from scripts.bench import audio_corpus as ac
from scripts.bench import speech_corpus as sc
from scripts.bench import wake_audio as wa
from scripts.bench import wake_conditions as wc
from scripts.bench import wake_detect as wd
from scripts.bench import wake_rules as wr
from scripts.bench.wake_scores import raw_scores

# Seconds of the recording's own audio kept each side of its words; None: the whole file.
VARIANTS: dict[str, float | None] = {"trim": 0.0, "0.1": 0.1, "0.2": 0.2, "0.3": 0.3, "file": None}
CLEAN = "clean"  # the trial with no noise added


def dropouts(x: np.ndarray, min_s: float = 0.01, within_db: float = 30.0) -> list[tuple[float, float]]:
    """Holes in a recording: runs of at least `min_s` of exact digital zeros inside its audio with
    the 20 ms on either side within `within_db` of its peak sample (audio lost mid-speech; a pause
    or a noise gate fades out first) -> [(at s, length s)]."""
    nz = np.flatnonzero(x)
    if not len(nz):
        return []
    z = np.concatenate([[0], (x[nz[0] : nz[-1] + 1] == 0).astype(np.int8), [0]])
    starts, ends = np.flatnonzero(np.diff(z) == 1) + nz[0], np.flatnonzero(np.diff(z) == -1) + nz[0]
    peak = float(np.max(np.abs(x)))
    out = []
    for a, b in zip(starts, ends, strict=True):
        sides = [x[max(0, a - 320) : a], x[b : b + 320]]
        loud = max(20 * np.log10(np.sqrt(np.mean(np.square(s, dtype=np.float64))) / peak + 1e-12) for s in sides)
        if b - a >= min_s * wc.RATE and loud > -within_db:
            out.append((round(float(a) / wc.RATE, 3), round(float(b - a) / wc.RATE, 3)))
    return out


def placed(x: np.ndarray, a: int, b: int, margin: float | None, lead: float) -> tuple[np.ndarray, np.ndarray]:
    """The recording cut to [a - margin, b + margin) (the whole file for None), at the place it has
    in the whole file after `lead` s of silence, then LATE_S + 0.2 s -> (clean, the words' frames)."""
    lead_n = int(lead * wc.RATE)
    clean = np.zeros(lead_n + len(x) + int((wc.LATE_S + 0.2) * wc.RATE), dtype=np.float32)
    m = len(x) if margin is None else int(margin * wc.RATE)
    lo, hi = max(0, a - m), min(len(x), b + m)
    clean[lead_n + lo : lead_n + hi] = x[lo:hi]
    labels = np.zeros(len(clean) // 320, dtype=bool)
    labels[(lead_n + a) // 320 : (lead_n + b) // 320] = True
    return clean, labels


def cache(model: str, folder: Path, variant: str, noise_seed: int = 0) -> dict:
    music = [a for _, a in sc.music_tracks()]
    recs = wa.recordings(folder, model)
    clips = []
    t0 = time.time()
    for i, rec in enumerate(recs):
        x, a, b = rec.audio, rec.start, rec.end
        conds = [(CLEAN, "none", wa.trial_clip_id(i))] + [
            (snr, kind, wa.trial_clip_id(i, kind)) for snr in wc.ACCEPT_SNRS for kind in wc.ACCEPT_NOISES
        ]
        for snr, kind, clip_id in conds:  # clip_id and lead as wake_acceptance.acceptance_recorded
            lead = 2.0 + 0.4 * (clip_id % 3)
            clean, labels = placed(x, a, b, VARIANTS[variant], lead)
            nz_id = wa.draw_seed(clip_id, noise_seed)  # another draw of the noise; the same lead
            clip = clean if snr == CLEAN else ac.mix(clean, wa.noise_for(kind, len(clean), nz_id, music), snr, labels)
            flags = wd.speech_flags(clip)
            clips.append(
                {
                    "rec": i,
                    "snr": snr,
                    "kind": kind,
                    "start": lead,
                    "end": lead + b / wc.RATE,
                    "all_frames": raw_scores(model, clip),
                    "skip_silence": raw_scores(model, clip, flags),
                }
            )
        if (i + 1) % 15 == 0:
            print(f"{variant}: {i + 1}/{len(recs)} recordings, {time.time() - t0:.0f} s", flush=True)
    return {
        "model": model,
        "variant": variant,
        "noise_seed": noise_seed,
        "files": [f.name for f in sorted((folder / model).glob("*.wav"))],
        "clips": clips,
    }


def _hits(data: dict, variant: str, cutoff: float) -> dict[tuple, bool]:
    """(recording, SNR, noise) -> accepted, with the shipped rule (mean of 5)."""
    return {(c["rec"], c["snr"], c["kind"]): wr.accepted(c, variant, "mean", 5, 0, cutoff) for c in data["clips"]}


def _pct(hits: dict[tuple, bool], keep) -> dict[str, str]:
    out: dict[str, list[bool]] = {}
    for (rec, snr, _kind), ok in hits.items():
        if keep(rec):
            out.setdefault(str(snr), []).append(ok)
    return {snr: f"{sum(o)}/{len(o)} = {100 * np.mean(o):.1f} %" for snr, o in out.items()}


def report(paths: list[Path], folder: Path, cutoff: float = 0.95) -> dict:
    """Per cache: acceptance with the shipped rule (resting on silence and every frame heard), the
    trials that differ from the words-only cache with the same noise, and acceptance without the
    recordings with a dropout (`dropouts`, a rule applied to all of them)."""
    from voxnode.audio.wavfile import read_audio

    holes = {w.name: dropouts(read_audio(w)) for w in sorted((folder / "alexa").glob("*.wav"))}
    out: dict = {"cutoff": cutoff, "dropouts": {k: v for k, v in holes.items() if v}, "caches": []}
    caches = [pickle.loads(p.read_bytes()) for p in paths]
    trims = {d.get("noise_seed", 0): d for d in caches if d["variant"] == "trim"}
    for data in caches:
        seed = data.get("noise_seed", 0)
        entry: dict = {"variant": data["variant"], "noise_seed": seed}
        for v in ("skip_silence", "all_frames"):
            hits = _hits(data, v, cutoff)
            entry[v] = _pct(hits, lambda rec: True)
            entry[v + "_missed_without_noise"] = [
                data["files"][r] for (r, snr, _), ok in hits.items() if snr == CLEAN and not ok
            ]
            if v == "skip_silence":
                entry["skip_silence_without_dropouts"] = _pct(
                    hits, lambda rec, files=data["files"]: not holes[files[rec]]
                )
            if seed in trims and data["variant"] != "trim":
                base = _hits(trims[seed], v, cutoff)
                entry[v + "_differs_from_trim"] = [
                    f"{data['files'][k[0]]} {k[2]} {k[1]}: {'heard' if ok else 'missed'}"
                    for k, ok in hits.items()
                    if ok != base[k]
                ]
        out["caches"].append(entry)
        print(json.dumps(entry), flush=True)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="alexa")
    p.add_argument("--variant", choices=list(VARIANTS))
    p.add_argument("--recordings", type=Path, default=wa.default_recordings())
    p.add_argument("--noise-seed", type=int, default=0, help="another draw of every noise (0: the bench's seeds)")
    p.add_argument("--out", type=Path)
    p.add_argument("--report", nargs="+", type=Path, metavar="PKL")
    p.add_argument("--write", metavar="JSON", help="with --report: save it here")
    args = p.parse_args()
    if args.report:
        out = report(args.report, args.recordings)
        if args.write:
            out["command"] = command_line()
            Path(args.write).write_text(json.dumps(out, indent=1) + "\n")
        return 0
    if not (args.variant and args.out):
        p.error("--variant and --out (or --report)")
    args.out.write_bytes(pickle.dumps(cache(args.model, args.recordings, args.variant, args.noise_seed)))
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
