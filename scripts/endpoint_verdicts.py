#!/usr/bin/env python3
"""How well the speculative decode's text tells a finished sentence from a fragment.

For every utterance of the live-noise corpus (scripts/speech_corpus.py: pocketsphinx-testdata +
Asterisk prompts, as scripts/sim_live.py and scripts/bench_live_noise.py use it): the whole
utterance, and (over 2 s of speech) its first part cut at the quietest point between 30 % and
70 % of the speech (where a speaker would pause mid-sentence), each followed by `vad.tail_ms` of
silence and decoded as the pipeline's speculative final is. Prints each verdict
(stream/endpoint.py) and how many of each kind a closing mark of probability >= p calls finished.

    PYTHONPATH=daemon .venv/bin/python scripts/endpoint_verdicts.py [--tail-ms 100]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import audio_corpus as ac  # noqa: E402
import speech_corpus as sc  # noqa: E402
from sim_live import FRAME, RATE, trim  # noqa: E402

from voxnode.stream.endpoint import Completion, judge  # noqa: E402
from voxnode.stream.pipeline import clean_text  # noqa: E402

THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.9)


def fragment_end(clip: np.ndarray, s0: int, s1: int) -> int:
    """The quietest 60 ms between 30 % and 70 % of the speech (sim_live.split_pause's choice)."""
    lv = ac.frame_levels_db(clip)
    lo, hi = (s0 + int(0.3 * (s1 - s0))) // FRAME, (s0 + int(0.7 * (s1 - s0))) // FRAME
    smooth = np.convolve(lv, np.ones(3) / 3, mode="same")
    return (lo + int(np.argmin(smooth[lo:hi]))) * FRAME


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tail-ms", type=int, default=100)
    ap.add_argument("--asterisk", type=int, default=15)
    args = ap.parse_args()
    from voxnode.asr import default_model_dir
    from voxnode.asr.whisper_litert import WhisperEngine

    engine = WhisperEngine.load(default_model_dir(), 1)
    tail = np.zeros(args.tail_ms * RATE // 1000, np.float32)
    probs: dict[str, list[float | None]] = {"whole": [], "fragment": []}
    for u in sc.real_speech(n_asterisk=args.asterisk, seed=0):
        clip, s0, s1 = trim(ac.at_dbfs(u.audio, -26))
        cuts = [("whole", s1)] + ([("fragment", fragment_end(clip, s0, s1))] if s1 - s0 >= 2 * RATE else [])
        for kind, end in cuts:
            r = engine.transcribe(np.concatenate([clip[:end], tail]) / 32768.0)
            text = clean_text(r.text)
            verdict = judge(text, r.stop_reason == "eot", None)  # the mark alone; probability below
            p = r.punctuation_prob if verdict == Completion.SENTENCE_END else None
            probs[kind].append(p)
            shown = "-" if r.punctuation_prob is None else f"{r.punctuation_prob:.2f}"
            print(f"{kind:8s} p={shown:4s} {verdict.value:12s} {text}", flush=True)
    print()
    print("| kind | n | " + " | ".join(f"finished at p >= {t}" for t in THRESHOLDS) + " |")
    print("|---|---|" + "---|" * len(THRESHOLDS))
    for kind, ps in probs.items():
        counts = [sum(1 for p in ps if p is not None and p >= t) for t in THRESHOLDS]
        print(f"| {kind} | {len(ps)} | " + " | ".join(str(c) for c in counts) + " |")


if __name__ == "__main__":
    main()
