#!/usr/bin/env python3
"""Decode time of one final at beam 1/2/3/5 (and the partials' greedy 6 s decode), interleaved.

The daemon decodes a final speculatively 200 ms into the pause and publishes it at the endpoint
(500 ms): what a final costs beyond that 300 ms shows up in the end-of-speech -> final latency,
whose p95 should stay under 800 ms. On a shared machine, load drifts over minutes, so every
utterance is decoded at every setting back to back, `--repeat` times, and each setting's time
is the median of its repeats: the settings see the same load.

    .venv-bench/bin/python scripts/bench_final_latency.py        # writes "ASR decode time per final"

Corpus: the clean utterances shorter than 8 s of scripts/speech_corpus.real_speech().
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
sys.path.insert(0, str(REPO / "daemon"))

from bench_asr import machine, update_benchmarks_md  # noqa: E402

TITLE = "ASR decode time per final"
SETTINGS = (
    ("partial (greedy, 6 s)", "partial", 1),
    ("final, beam 1", "final", 1),
    ("final, beam 2", "final", 2),
    ("final, beam 3", "final", 3),
    ("final, beam 5", "final", 5),
)


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--asterisk", type=int, default=90)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--docs", type=Path, default=REPO / "docs")
    p.add_argument("--no-write", action="store_true")
    args = p.parse_args()

    import speech_corpus

    from voxnode.asr.whisper_litert import WhisperEngine

    engine = WhisperEngine.load(REPO / "models" / "whisper-tiny.en", num_threads=args.threads)
    clips = [u.audio / 32768.0 for u in speech_corpus.real_speech(n_asterisk=args.asterisk) if u.duration_s < 8]
    wall = {name: [] for name, _, _ in SETTINGS}
    cpu = {name: [] for name, _, _ in SETTINGS}
    decode = {name: [] for name, _, _ in SETTINGS}
    for audio in clips:
        for _name, role, beam in SETTINGS:  # warm-up: the shapes of this length
            engine.transcribe(audio, role=role, beam_size=beam)
        runs: dict[str, list[tuple[float, float, float]]] = {name: [] for name, _, _ in SETTINGS}
        for _ in range(args.repeat):
            for name, role, beam in SETTINGS:
                c0, t0 = cpu_s(), time.perf_counter()
                r = engine.transcribe(audio, role=role, beam_size=beam)
                runs[name].append(((time.perf_counter() - t0) * 1000, (cpu_s() - c0) * 1000, r.decode_ms))
        for name in runs:
            w, c, d = np.median(np.array(runs[name]), axis=0)
            wall[name].append(w)
            cpu[name].append(c)
            decode[name].append(d)
    command = ".venv-bench/bin/python scripts/bench_final_latency.py " + " ".join(sys.argv[1:])
    lines = [
        f"## {TITLE}",
        "",
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {machine()}; {args.threads} inference "
        f"thread. {len(clips)} clean utterances shorter than 8 s (scripts/speech_corpus.py); each decoded at every "
        f"setting back to back, {args.repeat} times, median per utterance; the table gives the mean and p95 over "
        "utterances. Decode = prefill + search (+ fallback), after the encoder. Shared machine: absolute times "
        "are noisy, the settings' ratios less so; ARM boards will be several times slower.",
        "",
        "```",
        command.strip(),
        "```",
        "",
        "| setting | wall ms, mean / p95 | CPU ms, mean / p95 | of which decode ms, mean / p95 |",
        "|---|---|---|---|",
    ]
    for name, _, _ in SETTINGS:
        w, c, d = np.array(wall[name]), np.array(cpu[name]), np.array(decode[name])
        lines.append(
            f"| {name} | {w.mean():.0f} / {np.percentile(w, 95):.0f} | {c.mean():.0f} / {np.percentile(c, 95):.0f} "
            f"| {d.mean():.0f} / {np.percentile(d, 95):.0f} |"
        )
    section = "\n".join(lines) + "\n"
    print(section)
    if not args.no_write:
        update_benchmarks_md(args.docs / "benchmarks.md", TITLE, section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
