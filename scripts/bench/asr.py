"""Benchmark the ASR engine on real recorded speech, clean and in noise, against faster-whisper.

Benchmark venv only (scripts/bench/requirements.txt: faster-whisper, jiwer, whisper-normalizer):

    make bench-asr                                   # the "ASR engine" section
    .venv-bench/bin/python -m scripts.bench.asr --section windows \\
        --engines "voxnode min_window_s=6" "voxnode min_window_s=10" ...

Corpus: scripts.bench.speech_corpus.real_speech() (pocketsphinx-testdata: a LibriVox reader and a
card-name speaker; Asterisk prompts: one professional speaker), `--asterisk N` prompts drawn
with a fixed seed. Conditions: clean, and mixed with the noises of scripts/bench/audio_corpus.py
(babble of 6 espeak-ng voices, pink, white) at a speech-frame SNR. Scoring: scripts/bench/scoring.py
(jiwer over Whisper's English normaliser), corpus WER = all errors / all reference words.

Each engine runs in its own subprocess (its peak RSS is its own), one thread, over every
condition; each utterance is transcribed once after a warm-up. Compute is the worker's CPU
time (user + system) per utterance, which a shared machine inflates less than wall time.

Engine specs: "voxnode [key=value ...]" with keys beam_size, min_window_s, fallback (none, or
temperatures as 0.2/0.4/...), hotword_boost, variant,
model_dir (a model with a vocabulary shortlist runs through scripts/bench/shortlist_decoder.py), doubt
(K:TAU, a shortlist with the full logits where in doubt, simulated there), prompt, hotwords
(comma-separated), context (none, prompt, hotwords or both: the domain corpus's per-clip context),
label, and the [frontend] keys highpass_hz, denoise, denoise_engine, denoise_floor_db (every clip goes
through the front-end `voxnode transcribe` uses, with the default config unless these say otherwise;
frontend=none: the engine hears the clip as is);
"faster-whisper [beam_size=N] [prompt=...] [hotwords=...]
[context=...] [label=...]" (int8, its default temperature fallback, no timestamps, no VAD).
"moonshine [model=base] [model_dir=...] [vad_threshold=...] [lib=cpp] [label=...]" (Moonshine on its own
ONNX Runtime, the optional lines of bench/requirements.txt; docs/asr.md "Moonshine").
`--corpus domain` uses scripts/bench/domain_corpus.py instead (prompts and hotwords).

Writes the section into docs/benchmarks.md and the raw results to scripts/bench/results/asr_bench_<section>.json.
"""

# Its parts: asr_corpus (the clips), asr_engines (the engine specs and runners), asr_worker (one engine
# per subprocess, CPU time and RSS), asr_report (scoring, the markdown section, the targets).

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from scripts import REPO, RESULTS
from scripts.bench.asr_corpus import CONDITIONS, DEFAULT_CONDITIONS, ROOM_CONDITIONS, build_corpus
from scripts.bench.asr_report import TITLES, markdown, shell_quote, summarise, target_notes
from scripts.bench.asr_worker import cli_peak_rss, run_worker, worker
from scripts.bench.docs_section import replace_section

DEFAULT_ENGINES = (
    "voxnode beam_size=1 label=voxnode_greedy",
    "voxnode",
    "faster-whisper beam_size=1",
    "faster-whisper beam_size=5",
)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    p.add_argument("--section", default="engine", help="section of docs/benchmarks.md to write (engine, windows, ...)")
    p.add_argument("--engines", nargs="+", default=list(DEFAULT_ENGINES), help="engine specs (see above)")
    p.add_argument(
        "--conditions",
        nargs="+",
        default=None,
        choices=list(CONDITIONS) + list(ROOM_CONDITIONS),
        help=f"default: {', '.join(DEFAULT_CONDITIONS)} (with --corpus room: every room condition)",
    )
    p.add_argument(
        "--corpus",
        default="general",
        choices=("general", "domain", "room"),
        help="general speech, the domain set with prompts and hotwords (scripts/bench/domain_corpus.py), or the room "
        "recordings (talkers at their natural levels, one noise level throughout)",
    )
    p.add_argument(
        "--asterisk", type=int, default=90, help="Asterisk prompts in the corpus (besides the 10 pocketsphinx clips)"
    )
    p.add_argument("--threads", type=int, default=1)
    p.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="engines run side by side (each its own process: CPU time and RSS stay its own)",
    )
    p.add_argument("--docs", type=Path, default=REPO / "docs", help="where benchmarks.md is")
    p.add_argument("--results", type=Path, default=RESULTS, help="where the raw results (JSON) go")
    p.add_argument("--no-write", action="store_true", help="print the section, leave docs/ alone")
    p.add_argument(
        "--cli-python",
        default=str(REPO / ".venv" / "bin" / "python"),
        help="python of the runtime venv, for the `voxnode transcribe` RSS probe ('' to skip)",
    )
    args = p.parse_args()

    if args.worker:
        print(json.dumps(worker(args.worker[0], args.worker[1], int(args.worker[2]))))
        return 0

    if args.conditions is None:
        args.conditions = list(ROOM_CONDITIONS if args.corpus == "room" else DEFAULT_CONDITIONS)
    bad = [c for c in args.conditions if (c in ROOM_CONDITIONS) != (args.corpus == "room")]
    if bad:
        raise SystemExit(f"--conditions {', '.join(bad)}: room conditions go with --corpus room, and only they")
    with tempfile.TemporaryDirectory() as tmp:
        clips = build_corpus(Path(tmp), args.asterisk, args.conditions, args.corpus)
        clips_json = Path(tmp) / "clips.json"
        clips_json.write_text(json.dumps(clips))

        def one(spec: str) -> dict:
            t0 = time.time()
            result = run_worker(spec, clips_json, args.threads, sys.executable)
            print(f"{spec}: {time.time() - t0:.0f} s", flush=True)
            return result

        with ThreadPoolExecutor(max(1, args.jobs)) as pool:
            results = list(pool.map(one, args.engines))
    cli_rss = (
        cli_peak_rss(args.cli_python)
        if args.section == "engine" and args.cli_python and Path(args.cli_python).exists()
        else None
    )
    summaries = [summarise(r, clips, args.conditions) for r in results]
    py = Path(sys.executable)
    py = py.relative_to(REPO) if py.is_relative_to(REPO) else Path(".venv-bench/bin/python")
    command = f"{py} scripts/bench/asr.py " + " ".join(shell_quote(a) for a in sys.argv[1:])
    section = markdown(
        args.section,
        results,
        summaries,
        clips,
        args.conditions,
        command.strip(),
        args.threads,
        cli_rss,
        target_notes(results, summaries),
    )
    print(section)
    if not args.no_write:
        replace_section(args.docs / "benchmarks.md", TITLES.get(args.section, args.section), section)
        (args.results / f"asr_bench_{args.section}.json").write_text(
            json.dumps(
                {
                    "clips": [{k: v for k, v in c.items() if k != "path"} for c in clips],
                    "summaries": {r["label"]: s for r, s in zip(results, summaries, strict=True)},
                    "results": results,
                    "cli_peak_rss_mb": cli_rss,
                },
                indent=1,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
