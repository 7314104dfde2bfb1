"""Noise only through the whole speech pipeline (front-end, VAD, segmenter, Whisper):
how many utterances reach the engine, and how many transcripts come out, per hour.

Frames are fed as fast as the pipeline takes them (data time, not wall time);
partials are off because only finals are transcripts that leave the daemon.

    PYTHONPATH=daemon python -m scripts.bench.eval_noise_only [--minutes 3] [--set vad.engine=spectral]
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np

from scripts.bench import audio_corpus as ac
from scripts.bench.settings import apply_sets, parse_sets
from voxnode.config import Config
from voxnode.stream.recognition import Recognition


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=3.0)
    ap.add_argument("--set", action="append", default=[], help="section.key=value (scripts/bench/settings.py)")
    args = ap.parse_args()
    sets = parse_sets(args.set)  # checked by the config loader before the model loads
    from voxnode.asr import default_model_dir
    from voxnode.asr.whisper.engine import WhisperEngine

    engine = WhisperEngine.load(default_model_dir(), 2)
    cfg = Config()
    cfg = apply_sets(dataclasses.replace(cfg, stream=dataclasses.replace(cfg.stream, partials=False)), sets)
    n = int(args.minutes * 60 * ac.RATE)
    print(f"settings: {args.set or 'defaults'}; {args.minutes:g} min per noise and level")
    print("| noise | level dBFS | utterances decoded /h | transcripts /h | example |\n|---|---|---|---|---|")
    for kind in ac.NOISES:
        for level in (-45, -30):
            events = []
            svc = Recognition(cfg, events.append, [engine])
            svc.start()
            p = svc.pipeline("n")
            x = np.frombuffer(
                ac.to_pcm16(np.concatenate([ac.silence(2.0), ac.at_dbfs(ac.noise(kind, n, seed=31), level)])),
                dtype="<i2",
            )
            t0 = time.monotonic()
            for k in range(len(x) // 320):
                p.feed(x[k * 320 : (k + 1) * 320], k, t0 + k * 0.02, time.time() + k * 0.02)
            p.flush()
            svc.stop(time.monotonic() + 120)
            st = svc.stats()
            decoded = st["scheduler"]["completed"]["FINAL"]
            per_h = 60 / args.minutes
            texts = [e.text for e in events if e.type == "final"]
            print(
                f"| {kind} | {level} | {decoded * per_h:.0f} | {len(texts) * per_h:.0f} | "
                f"{texts[0][:40] if texts else ''} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
