"""How well a stream's speech-to-noise figure (stream/speech_levels.py: health `speech_snr_db`) reads
the room: the live-noise benchmark's recordings (scripts/bench/live_noise_audio.py, real speech, the
noise running throughout at a known level) through the daemon's front-end and segmenter with the
default config, each utterance's estimate against its true SNR (its active speech level over the
noise's power, broadband: the benchmarks' SNR).

    PYTHONPATH=daemon .venv/bin/python -m scripts.bench.speech_snr [--conditions room-white-10 pink-10 ...]
        [--write scripts/bench/results/speech_snr.json]

Prints per condition: utterances matched, the true SNR's range, the estimate's mean error and its
spread, and the median of the last 10 utterances as health would report it at the end.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import numpy as np

from scripts.bench.live_noise_audio import FRAME, RATE, Condition, cached_track
from voxnode.config import Config
from voxnode.frontend.chain import FrontEnd
from voxnode.stream.params import pipeline_params
from voxnode.stream.segmenter import Chunk, Discarded, Ended, Segmenter
from voxnode.stream.speech_levels import SpeechLevels

DEFAULT_CONDITIONS = (
    "clean",
    "white-10",
    "pink-10",
    "pink-5",
    "babble-10",
    "fan-5",
    "hvac-5",
    "music-10",
    "room-white-10",
    "room-pink-5",
    "room-babble-10",
)
ROOM_TONE_DBFS = -70.0  # live_noise_audio.ROOM_DBFS: the only noise of "clean"


def measure(name: str, n_utts: int = 25, seed: int = 9) -> dict:
    cond = Condition.parse(name)
    track = cached_track(cond, n_utts, seed, 600.0)
    params = pipeline_params(Config())
    fe, seg, levels = FrontEnd(params.frontend), Segmenter(params.segmenter), SpeechLevels("bench")
    audio = np.clip(np.round(track.audio), -32768, 32767).astype(np.int16)
    noise_dbfs = track.noise_dbfs if track.noise_dbfs is not None else ROOM_TONE_DBFS
    rows = []
    for i in range(len(audio) // FRAME):
        out = fe.process(audio[i * FRAME : (i + 1) * FRAME])
        t = i * FRAME / RATE
        events = seg.push(Chunk(out.samples, i, t, t, out.speech, out.level_db))
        for ev in events:
            if isinstance(ev, Ended):
                assert fe.noise_floor is not None
                got = levels.ended(fe.noise_floor.floor_dbfs)
                start = ev.utterance.chunks[0].seq * FRAME
                end = ev.utterance.chunks[ev.utterance.last_speech].seq * FRAME + FRAME
                best = max(track.utts, key=lambda u: min(end, u.speech_end) - max(start, u.speech_start))
                if got is not None and min(end, best.speech_end) > max(start, best.speech_start):
                    true = best.level_dbfs - noise_dbfs
                    rows.append({"utt": best.name, "true_snr_db": round(true, 1), "estimate_db": got.snr_db})
            elif isinstance(ev, Discarded):
                levels.discarded()
        if seg.active is not None and out.speech and out.floor is not None:
            levels.frame(out.floor.level_dbfs)
    errors = [r["estimate_db"] - r["true_snr_db"] for r in rows]
    trues = [r["true_snr_db"] for r in rows]
    return {
        "condition": name,
        "utterances": len(rows),
        "true_snr_db": [min(trues), max(trues)] if trues else None,
        "mean_error_db": round(statistics.fmean(errors), 1) if errors else None,
        "sd_error_db": round(statistics.pstdev(errors), 1) if len(errors) > 1 else None,
        "health_speech_snr_db": levels.snapshot().get("speech_snr_db"),
        "true_median_last_10_db": round(statistics.median(trues[-10:]), 1) if trues else None,
        "rows": rows,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--conditions", nargs="+", default=list(DEFAULT_CONDITIONS))
    ap.add_argument("--utterances", type=int, default=25)
    ap.add_argument("--write", type=Path)
    args = ap.parse_args()
    results = []
    print("| condition | utterances | true SNR, dB | estimate - true: mean / sd, dB | health (last 10) / true |")
    print("|---|---|---|---|---|")
    for name in args.conditions:
        r = measure(name, args.utterances)
        results.append(r)
        lo_hi = "-" if r["true_snr_db"] is None else f"{r['true_snr_db'][0]:.0f} to {r['true_snr_db'][1]:.0f}"
        print(
            f"| {name} | {r['utterances']} | {lo_hi} | {r['mean_error_db']} / {r['sd_error_db']} | "
            f"{r['health_speech_snr_db']} / {r['true_median_last_10_db']} |",
            flush=True,
        )
    if args.write:
        args.write.write_text(json.dumps({"conditions": results}, indent=1) + "\n")


if __name__ == "__main__":
    main()
