"""The final's first encoder window (`[asr] min_window_s`): how often it loops, its WER and CPU.

tiny.en sometimes repeats a short command in a window mostly made of zero padding ("Press 4 for the
previous message. Press 4 for ..."); the engine then decodes it again in a longer window
(asr/whisper/redecode.looped, engine.retry_window): on an emulated Pi 4 such a final outlasts the
700 ms hangover. A longer first window loops less but encodes more for every final. Here each real
utterance (scripts/bench/speech_corpus.py; clean, and pink / babble mixed at `--snr`) is decoded as
the daemon decodes it at the end of speech: a greedy partial of all but the last `--lag` seconds
gives the draft (1.2 s: where the Pi 4's pacing of partials leaves it), a partial of that audio
runs just before the final (the window change is counted), then the final (beam 3, the draft) at
each first window. A final "looped" when it came back in a window longer than its first.

It prints per condition and window: WER (Whisper's English normaliser), the finals that looped,
and the final's process CPU median / mean / p95 (1 thread; fair under `nice`), and saves every
final's text and figures in scripts/bench/results/first_window.json.

`--partial-window W` gives every partial (the draft's included) a W s window instead of the
engine's 6 s (`--partial-window 6`: the engine's), and then measures the partials a speaking stream
would run too: one every 0.5 s of audio from 1 s on, their process CPU and how each ended
(end-of-text, token cap, ...).

    nice -n 19 .venv-bench/bin/python -m scripts.bench.first_window --windows 6 7 8
    nice -n 19 .venv-bench/bin/python -m scripts.bench.first_window --windows 6 --partial-window 4
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time

import numpy as np

from scripts import RESULTS, command_line


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--windows", type=float, nargs="+", default=[6.0, 7.0, 8.0])
    p.add_argument("--conditions", nargs="+", default=["clean", "pink", "babble"])
    p.add_argument("--snr", type=float, default=10.0, help="SNR (dB) of the noisy conditions, per clip")
    p.add_argument("--lag", type=float, default=1.2, help="seconds of speech the draft's partial misses")
    p.add_argument("--asterisk", type=int, default=40, help="Asterisk prompts in the corpus (plus 10 pocketsphinx)")
    p.add_argument("--partial-window", type=float, default=None, help="partials' window, s (default: the engine's)")
    p.add_argument("--partial-step", type=float, default=0.5, help="seconds of audio between measured partials")
    p.add_argument("--out", default=str(RESULTS / "first_window.json"))
    args = p.parse_args(argv)

    from scripts.bench import audio_corpus, scoring, speech_corpus
    from scripts.bench.asr_corpus import clip_noise
    from scripts.bench.drafts import head_and_draft
    from scripts.bench.machine import describe
    from voxnode.asr import default_model_dir
    from voxnode.asr.whisper.engine import WhisperEngine

    eng = WhisperEngine.load(default_model_dir(None, "tiny.en"), 1)
    if args.partial_window is not None:
        eng.options = dataclasses.replace(eng.options, partial_window_s=args.partial_window)
    base = eng.options
    utts = speech_corpus.real_speech(n_asterisk=args.asterisk)
    exclude = {u.name for u in utts}
    rows = []
    for cond in args.conditions:
        for k, u in enumerate(utts):
            audio = u.audio
            if cond != "clean":
                audio = audio_corpus.mix(audio, clip_noise(cond, len(audio), 1000 + k, exclude), args.snr)
            audio = (audio / 32768.0).astype(np.float32)
            duration = len(audio) / 16000
            head, draft = head_and_draft(eng, audio, args.lag)
            row: dict = {"condition": cond, "name": u.name, "duration_s": round(duration, 3), "reference": u.text}
            if args.partial_window is not None:  # the partials are measured only when their window is asked
                row["partials"] = partials(eng, audio, args.partial_step)
            for w in args.windows:
                eng.options = dataclasses.replace(base, min_window_s=w)
                eng.transcribe(head, role="partial")
                c0 = time.process_time()
                r = eng.transcribe(audio, role="final", draft=draft)
                cpu_ms = (time.process_time() - c0) * 1000
                first = max(w, float(np.ceil(duration + 1)))
                looped = bool(r.window_s > first)
                row[f"{w:g}"] = {"cpu_ms": round(cpu_ms, 1), "window_s": r.window_s, "looped": looped, "text": r.text}
            eng.options = base
            rows.append(row)
            figures = {w: (row[f"{w:g}"]["looped"], row[f"{w:g}"]["cpu_ms"]) for w in args.windows}
            print(cond, f"{duration:.1f} s", figures, flush=True)

    summary = []
    for cond in args.conditions:
        rs = [r for r in rows if r["condition"] == cond]
        if args.partial_window is not None:
            summary.append(partials_line(cond, base.partial_window_s, [p for r in rs for p in r["partials"]]))
            print(summary[-1], flush=True)
        for w in args.windows:
            sel = [r[f"{w:g}"] for r in rs]
            cpu = [s["cpu_ms"] for s in sel]
            line = {
                "condition": cond,
                "min_window_s": w,
                "wer": round(scoring.corpus_score([r["reference"] for r in rs], [s["text"] for s in sel]).wer, 2),
                "looped": sum(s["looped"] for s in sel),
                "finals": len(sel),
                "cpu_ms_p50": round(float(np.median(cpu)), 1),
                "cpu_ms_mean": round(float(np.mean(cpu)), 1),
                "cpu_ms_p95": round(float(np.percentile(cpu, 95)), 1),
            }
            summary.append(line)
            print(line, flush=True)
    with open(args.out, "w") as f:
        json.dump({"command": command_line(), "machine": describe(), "summary": summary, "finals": rows}, f, indent=1)
    print("saved", args.out)
    return 0


def partials_line(cond: str, window_s: float, measured: list[tuple[float, str]]) -> dict:
    cpu = [c for c, _ in measured]
    ends = [e for _, e in measured]
    return {
        "condition": cond,
        "partial_window_s": window_s,
        "partials": len(cpu),
        "partial_cpu_ms_p50": round(float(np.median(cpu)), 1),
        "partial_cpu_ms_mean": round(float(np.mean(cpu)), 1),
        "partial_cpu_ms_p95": round(float(np.percentile(cpu, 95)), 1),
        "partial_ends": {e: ends.count(e) for e in sorted(set(ends))},
    }


def partials(eng, audio: np.ndarray, step_s: float) -> list[tuple[float, str]]:
    """(process CPU ms, stop reason) of the partials a speaking stream runs on `audio`: one every
    `step_s` of audio from 1 s on, while at least 0.3 s is left (partials stop at the pause)."""
    out = []
    t = 1.0
    while t < len(audio) / 16000 - 0.3:
        c0 = time.process_time()
        r = eng.transcribe(audio[: int(t * 16000)], role="partial")
        out.append((round((time.process_time() - c0) * 1000, 1), r.stop_reason))
        t += step_s
    return out


if __name__ == "__main__":
    sys.exit(main())
