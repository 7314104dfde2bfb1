"""Whole-utterance repeats in live finals: short real commands, one per pause, through the live pipeline.

Issue 27, item 7: "Set bedroom light green." came out live as "Set bedroom light green. Set bedroom
light green.". Here the short Asterisk prompts (0.5-3 s, scripts/bench/speech_corpus.py) and the
pocketsphinx-testdata cards go frame by frame through the real FrontEnd -> Segmenter ->
StreamPipeline in simulated time (scripts/bench/sim_live.py), each decode handed the draft, prompt and
hotwords as the daemon's DecodeScheduler hands them (sim_live's SimScheduler._run).
A final is counted as repeated when its words are k >= 2 copies of one phrase and its reference's
are not.

    PYTHONPATH=daemon .venv-bench/bin/python -m scripts.bench.probe_repeats [--prompt cards|telephony]
        [--noise babble --snr 10] [--n 40 --seed 0] [--show]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time

import numpy as np

from scripts.bench import audio_corpus as ac
from scripts.bench import domain_corpus, scoring
from scripts.bench import sim_live as sl
from scripts.bench import speech_corpus as sc
from voxnode.config import Config
from voxnode.stream.params import pipeline_params
from voxnode.stream.pipeline import StreamPipeline
from voxnode.text import key, words

RATE, FRAME = sl.RATE, sl.FRAME


def copies(text: str) -> int:
    """k when the words of `text` are k >= 2 copies of one phrase, else 1."""
    u = [key(w) for w in words(text)]
    for n in range(1, len(u) // 2 + 1):
        if len(u) % n == 0 and u == u[:n] * (len(u) // n):
            return len(u) // n
    return 1


def commands(n: int, seed: int) -> list[sc.Utterance]:
    """The 5 cards clips and `n` Asterisk prompts of 0.5-3 s drawn with `seed`."""
    short = list(sc.asterisk(0.5, 3.0))
    rng = np.random.default_rng(seed)
    picked = [short[i] for i in sorted(rng.choice(len(short), min(n, len(short)), replace=False))]
    return [u for u in sc.pocketsphinx() if u.name.startswith("cards/")] + picked


def recording(clips: list[sc.Utterance], pause_s: float, noise: str, snr: float, seed: int):
    rng = np.random.default_rng(seed)
    parts, placed, pos = [ac.silence(2.0)], [], 2 * RATE
    for u in clips:
        clip, s0, s1 = sl.trim(ac.at_dbfs(u.audio, -26 + rng.uniform(-3, 3)))
        parts += [clip, ac.silence(pause_s)]
        placed.append(sl.Placed(u.text, (pos + s0) / RATE, (pos + s1) / RATE))
        pos += len(clip) + int(pause_s * RATE)
    audio = np.concatenate(parts)
    audio = audio[: len(audio) // FRAME * FRAME]
    if noise != "clean":
        labels = np.zeros(len(audio) // FRAME, dtype=bool)
        for p in placed:
            labels[int(p.start * RATE) // FRAME : int(p.end * RATE) // FRAME] = True
        audio = ac.mix(audio, ac.noise(noise, len(audio), seed=seed + 7), snr, labels)
    return audio, placed


def run(engine, config: Config, audio: np.ndarray, placed: list[sl.Placed]) -> dict:
    clock = sl.SimClock()
    sched = sl.SimScheduler(engine, clock, config.stream.partial_max_wait_ms / 1000)
    events: list[dict] = []

    def emit(e) -> None:
        events.append({**e.as_dict(), "t": clock.now, "start_s": e.start, "end_s": e.end})

    pipe = StreamPipeline("probe", pipeline_params(config), sched, emit, clock)
    for i in range(len(audio) // FRAME):
        t = (i + 1) * FRAME / RATE
        clock.now = t
        sched.advance(t)
        pipe.feed(audio[i * FRAME : (i + 1) * FRAME], i, t - FRAME / RATE, t - FRAME / RATE)
    pipe.flush()
    sched.advance(float("inf"))
    finals = [e for e in events if e["type"] == "final"]
    repeated = []
    for f in finals:
        ref = " ".join(p.text for p in placed if f["start_s"] < p.end + 0.1 and f["end_s"] > p.start - 0.1)
        if copies(f["text"]) > 1 and copies(f["text"]) != copies(ref):
            repeated.append((ref, f["text"]))
    live = scoring.corpus_score([" ".join(p.text for p in placed)], [" ".join(f["text"] for f in finals)])
    return {
        "utterances": len(placed),
        "finals": len(finals),
        "repeated": len(repeated),
        "live_wer": round(live.wer, 1),
        "decodes": sched.decodes,
        "engine_s": round(sched.busy_s, 2),
        "examples": repeated,
        "finals_text": [f["text"] for f in finals],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=40, help="Asterisk prompts (plus the 5 cards clips)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--prompt", default="", help='"cards", "telephony" (scripts/bench/domain_corpus.py) or the text')
    ap.add_argument("--pause", type=float, default=1.5, help="seconds of silence after each command")
    ap.add_argument("--noise", default="clean")
    ap.add_argument("--snr", type=float, default=10.0)
    ap.add_argument("--no-draft", action="store_true", help="[asr] draft = false")
    ap.add_argument("--show", action="store_true", help="print every final")
    args = ap.parse_args()
    from voxnode.asr import default_model_dir
    from voxnode.asr.whisper.engine import WhisperEngine

    prompt = domain_corpus.CONTEXT[args.prompt]["prompt"] if args.prompt in domain_corpus.CONTEXT else args.prompt
    engine = WhisperEngine.load(default_model_dir(), 1)
    # The engine reads [asr] prompt and draft from its options (a stream's prompt None = the engine's).
    engine.options = dataclasses.replace(engine.options, prompt=prompt, draft=not args.no_draft)
    audio, placed = recording(commands(args.n, args.seed), args.pause, args.noise, args.snr, args.seed)
    t0 = time.time()
    r = run(engine, Config(), audio, placed)
    shown = r.pop("finals_text")
    r.update(prompt=args.prompt, noise=args.noise, snr=args.snr if args.noise != "clean" else None, seed=args.seed)
    r["wall_s"] = round(time.time() - t0, 1)
    print(json.dumps(r))
    if args.show:
        for text in shown:
            print("   ", text)


if __name__ == "__main__":
    main()
