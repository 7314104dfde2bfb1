"""Time of one final decode at several beam widths and minimum windows, as the daemon runs it.

The daemon decodes a final speculatively 200 ms into the pause and publishes it at the endpoint.
Live recognition wants end of speech -> final p50 <= 350 ms for a sentence in quiet, so the
final's whole `transcribe()` (log-mel, encoder, decoder) of an utterance shorter than 8 s should
take about 150 ms or less at the median on a quiet 2-core machine.

In the daemon a final follows the partials of the same utterance (greedy, 6 s window or the
utterance plus 1 s): when the final's window differs, the encoder and decoder are resized and
their buffers reallocated before the final runs. So every timed final here comes right after a
partial of the same audio, and that cost is in the figure (the "encode" column holds it).

On a shared machine load drifts over minutes, so every utterance is decoded at every setting
back to back, `--repeat` times, and each setting's time per utterance is the median of its
repeats: the settings see the same load. The table gives the median and p95 over utterances of
wall time, CPU time (user + system of the process: both threads with --threads 2) and encode /
decode time, once per thread count.

    .venv-bench/bin/python -m scripts.bench.final_latency --threads 1 2     # writes "ASR decode time per final"
    .venv-bench/bin/python -m scripts.bench.final_latency --model tiny.en base --finals 3@6   # "..., tiny.en and base"

Corpus: the clean utterances shorter than 8 s of scripts.bench.speech_corpus.real_speech().
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

from scripts import REPO, RESULTS
from scripts.bench.docs_section import replace_section
from scripts.bench.machine import describe

TITLE = "ASR decode time per final"
DEFAULT_FINALS = ("1@6", "2@6", "3@6", "5@6", "1@10", "2@10", "3@10", "5@10")


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def parse_final(spec: str) -> tuple[int, float]:
    """ "B@W" -> (beam size B, minimum window W seconds)."""
    beam, _, window = spec.partition("@")
    return int(beam), float(window)


def measure(threads: int, clips: list[np.ndarray], finals: list[str], repeat: int, model: str = "tiny.en") -> dict:
    from voxnode.asr.whisper.engine import WhisperEngine, default_options
    from voxnode.asr.whisper.files import model_dir_name

    engine = WhisperEngine.load(REPO / "models" / model_dir_name(model), num_threads=threads)
    base = default_options()

    def final(audio: np.ndarray, spec: str):
        beam, window = parse_final(spec)
        engine.options = dataclasses.replace(base, beam_size=beam, min_window_s=window)
        return engine.transcribe(audio, role="final")

    names = ["partial"] + list(finals)
    per_clip: dict[str, list[np.ndarray]] = {n: [] for n in names}  # each: [wall, cpu, encode, decode] medians
    fallbacks = {n: 0 for n in names}
    retries = {n: 0 for n in names}
    for audio in clips:
        for spec in finals:  # warm-up: this length's shapes at every setting
            engine.transcribe(audio, role="partial")
            final(audio, spec)
        runs: dict[str, list[tuple[float, float, float, float]]] = {n: [] for n in names}
        for rep in range(repeat):
            for spec in finals:
                # The partial before each final, as in the daemon (timed too: the "partial" row).
                c0, t0 = cpu_s(), time.perf_counter()
                r = engine.transcribe(audio, role="partial")
                runs["partial"].append(
                    ((time.perf_counter() - t0) * 1000, (cpu_s() - c0) * 1000, r.encode_ms, r.decode_ms)
                )
                c0, t0 = cpu_s(), time.perf_counter()
                r = final(audio, spec)
                runs[spec].append(((time.perf_counter() - t0) * 1000, (cpu_s() - c0) * 1000, r.encode_ms, r.decode_ms))
                if rep == 0:
                    fallbacks[spec] += int(r.temperature > 0)
                    retries[spec] += int(r.window_s > max(parse_final(spec)[1], np.ceil(len(audio) / 16000 + 1)))
        for n in names:
            per_clip[n].append(np.median(np.array(runs[n]), axis=0))
    engine.close()  # main measures each model and thread count with an engine of its own
    out = {}
    for n in names:
        a = np.array(per_clip[n])
        out[n] = {
            "median": np.median(a, axis=0).round(1).tolist(),
            "p95": np.percentile(a, 95, axis=0).round(1).tolist(),
            "fallbacks": fallbacks[n],
            "retries": retries[n],
        }
    return out


def label(name: str) -> str:
    if name == "partial":
        return "partial (greedy, 6 s)"
    beam, window = parse_final(name)
    return f"final, beam {beam}, {window:g} s" if beam > 1 else f"final, greedy, {window:g} s"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--asterisk", type=int, default=40, help="Asterisk prompts in the corpus (plus 10 pocketsphinx)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--finals", nargs="+", default=list(DEFAULT_FINALS), help="final settings, BEAM@MIN_WINDOW_S")
    p.add_argument("--docs", type=Path, default=REPO / "docs", help="where benchmarks.md is")
    p.add_argument("--results", type=Path, default=RESULTS, help="where the raw results (JSON) go")
    p.add_argument(
        "--model",
        nargs="+",
        default=["tiny.en"],
        help="[asr] models (tiny.en, base), each timed after the other per thread count; other than tiny.en alone: "
        "a section of their own",
    )
    p.add_argument("--no-write", action="store_true")
    args = p.parse_args()
    alone = args.model == ["tiny.en"]
    title = TITLE if alone else f"{TITLE}, {' and '.join(args.model)}"
    stem = "final_latency" if alone else "final_latency_" + "_".join(args.model)

    from scripts.bench import speech_corpus

    clips = [u.audio / 32768.0 for u in speech_corpus.real_speech(n_asterisk=args.asterisk) if u.duration_s < 8]
    load_before = os.getloadavg()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    results = []  # one record per (model, threads): {"model", "threads", "settings": {setting: figures}}
    for threads in args.threads:
        for model in args.model:  # the models in turn at each thread count: they see about the same load
            t0 = time.time()
            settings = measure(threads, clips, args.finals, args.repeat, model)
            results.append({"model": model, "threads": threads, "settings": settings})
            print(f"{model}, {threads} thread(s): {time.time() - t0:.0f} s", flush=True)
    load_after = os.getloadavg()
    command = ".venv-bench/bin/python -m scripts.bench.final_latency " + " ".join(sys.argv[1:])
    lines = [
        f"## {title}",
        "",
        f"Measured {started} on {describe()}; load average {load_before[0]:.1f} before, {load_after[0]:.1f} after "
        f"(other jobs share the CPUs: absolute times are inflated and noisy, the settings' ratios less so; ARM "
        f"boards will be several times slower). Whisper {' and '.join(args.model)}; {len(clips)} clean utterances "
        "shorter than 8 s "
        "(scripts/bench/speech_corpus.py); each final decoded right after a partial of the same audio (as in the "
        "daemon; "
        f"a window change resizes the graphs, counted in encode), every setting back to back, {args.repeat} times, "
        "median per utterance; the table gives the median and p95 over utterances. Final = the whole "
        "`transcribe()` (log-mel + encoder + prefill + search + fallback). CPU = user + system of the process.",
        "",
        "```",
        command.strip(),
        "```",
    ]
    for record in results:
        model, threads = record["model"], record["threads"]
        lines += [
            "",
            f"{model}, {threads} inference thread{'s' if threads != 1 else ''}:",
            "",
            "| setting | wall ms, median / p95 | CPU ms, median / p95 | encode ms, median / p95 "
            "| decode ms, median / p95 | fallback / retry |",
            "|---|---|---|---|---|---|",
        ]
        for name, r in record["settings"].items():
            m, q = r["median"], r["p95"]
            lines.append(
                f"| {label(name)} | {m[0]:.0f} / {q[0]:.0f} | {m[1]:.0f} / {q[1]:.0f} | {m[2]:.0f} / {q[2]:.0f} "
                f"| {m[3]:.0f} / {q[3]:.0f} | {r['fallbacks']} / {r['retries']} |"
            )
    section = "\n".join(lines) + "\n"
    print(section)
    if not args.no_write:
        replace_section(args.docs / "benchmarks.md", title, section)
        (args.results / f"asr_bench_{stem}.json").write_text(
            json.dumps(
                {
                    "measured": started,
                    "models": args.model,
                    "load": [load_before, load_after],
                    "clips": len(clips),
                    "results": results,
                },
                indent=1,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
