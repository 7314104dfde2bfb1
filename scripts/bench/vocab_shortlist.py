"""Decoder logits over a shortlist of the vocabulary (issue 23): what a step, a final and a partial
cost against today's decoder, and which finals' texts change.

Each shortlist keeps every special/timestamp token and either every id below K (`--below`:
build/whisper-tiny.en-v<K>) or every id below 1024 and the tokens of the N most frequent English
words (`--words`, wordfreq: build/whisper-tiny.en-words<N>); scripts/convert/whisper/shortlist.py
cuts the shipped decoder's output projection to those rows, bit for bit, when the folder is missing,
and scripts/bench/shortlist_decoder.py runs it. Measured per thread count, the models side by side
so that each sees the same load (each model's logits are first checked to be the full decoder's at
the ids it keeps):

- one decoder call (a step) alone, `--reps` calls in a row as decode_profile.py --rows does: 1 row
  (greedy) and 3 rows (beam 3), process CPU per call of the invoke, and of the invoke with its
  logits read out and mapped back to the full vocabulary (what DecoderRunner.step adds);
  the models take turns in `--rounds` rounds, the median round kept;
- each of the 50 real utterances (speech_corpus.real_speech(n_asterisk=40)) decoded as
  decode_profile.py does: a greedy partial of all but the last 1.2 s, then the final (beam 3, that
  partial's tokens as its draft), process CPU of each (the median of `--repeat`), the final's steps;
- the finals' texts against today's decoder: how many differ, and each pair.

WER in noise comes from scripts/bench/asr.py (its `shortlist` section, `model_dir=` engines).

    nice -n 19 .venv-bench/bin/python -m scripts.bench.vocab_shortlist
    (defaults: --below 8192 16384 24576 32768 --words 10000 20000 --threads 1 2)

Process CPU is fair under `nice` on a shared host; wall time is not (not used). Pi 4 figures are
host CPU / 0.09 (decode_profile.PI4_FRACTION): an estimate, which models neither the Pi 4's memory
bandwidth (where reading fewer weights should matter more than here) nor its NEON kernels.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from scripts import REPO, RESULTS, command_line
from scripts.bench.decode_profile import PI4_FRACTION, Profiler, instrument, measure
from scripts.bench.shortlist_decoder import entry_of, load_engine

FULL = "full"
WORDS_BASE = 1024  # a word-list shortlist keeps every id below this too: bytes, short pieces, punctuation


def word_ids(n: int, source: Path) -> np.ndarray:
    """The ids of the n most frequent English words as Whisper writes them mid-sentence (" word")
    and capitalised (" Word"), by wordfreq (its data: CC BY-SA 4.0; used here to measure, nothing of
    it is committed). Not in bench/requirements.txt: `pip install wordfreq` into the bench venv."""
    try:
        import wordfreq
    except ImportError:
        raise SystemExit("--words needs wordfreq in this venv (pip install wordfreq)") from None
    from voxnode.asr.whisper.tokenizer import Tokenizer

    eot = json.loads((source / "model_config.json").read_text())["tokens"]["eot"]
    tok = Tokenizer.from_file(source / "vocabulary.txt", eot, source / "merges.npy")
    ids = set()
    for w in wordfreq.top_n_list("en", n):
        ids.update(tok.encode(" " + w))
        ids.update(tok.encode(" " + w.capitalize()))
    return np.array(sorted(ids), np.int32)


def model_dirs(below: list[int], words: list[int], source: Path) -> dict[str, Path]:
    """The shortlisted models (made in build/ when missing): every id below K; or every id below
    WORDS_BASE and the word list's ids."""
    from scripts.convert.whisper import shortlist

    dirs = {FULL: source}
    for k in below:
        out = REPO / "build" / f"whisper-tiny.en-v{k}"
        if not out.exists():
            shortlist.main([str(source), str(out), "--below", str(k)])
        dirs[f"v{k}"] = out
    for n in words:
        out = REPO / "build" / f"whisper-tiny.en-words{n}"
        if not out.exists():
            ids = REPO / "build" / f"word-ids-{n}.npy"
            np.save(ids, word_ids(n, source))
            shortlist.main([str(source), str(out), "--below", str(WORDS_BASE), "--text-ids", str(ids)])
        dirs[f"words{n}"] = out
    return dirs


def step_cpu(dirs: dict[str, Path], threads: int, reps: int, rounds: int) -> dict[str, dict[str, float]]:
    """Per model: ms of process CPU per call, median over `rounds` rounds of `reps` calls each."""
    from scripts.bench import speech_corpus

    audio = (speech_corpus.pocketsphinx()[0].audio[:80000] / 32768.0).astype(np.float32)
    setups = {}
    for label, d in dirs.items():
        engine = load_engine(d, threads)
        engine._encode(audio, 6.0)
        dec = engine._decoder
        start = engine.start_sequence()
        prefix = dec.prefill([*start.tokens, 383, 318, 257], start.sot_index)
        setups[label] = (engine, dec, prefix)
    full = setups[FULL][2].row_logits
    for label, (_e, _dec, prefix) in setups.items():
        kept = np.isfinite(prefix.row_logits[0])  # a cut model's kept ids are its finite logits
        if not np.array_equal(prefix.row_logits[:, kept], full[:, kept]):
            raise SystemExit(f"{label}: its logits are not the full decoder's at the ids it keeps")
    times: dict[str, dict[str, list[float]]] = {label: {} for label in dirs}
    for _ in range(rounds):
        for label, (_engine, dec, prefix) in setups.items():
            for n in (1, 3):
                hyps = dec.hypotheses(prefix, n, 16)
                x = dec._x([262] * n, [prefix.length] * n)
                dec._invoke({"x": x, "mask": hyps.mask(), "pick": np.eye(n, dtype=np.float32)}, hyps)
                c0 = time.process_time()
                for _ in range(reps):
                    dec.it.invoke()
                times[label].setdefault(f"invoke_{n}", []).append((time.process_time() - c0) / reps * 1000)
                c0 = time.process_time()
                for _ in range(reps):
                    dec.it.invoke()
                    dec.it.get_tensor(dec.outputs["logits"])  # mapped to the full vocabulary
                times[label].setdefault(f"call_{n}", []).append((time.process_time() - c0) / reps * 1000)
    for engine, _dec, _prefix in setups.values():
        engine.close()
    return {label: {k: round(float(np.median(v)), 4) for k, v in t.items()} for label, t in times.items()}


def finals_of(run: dict) -> dict:
    finals = run["finals"]
    steps = [s[0] for f in finals for s in f["steps_ms"]]
    cpu = [f["cpu_ms"] for f in finals]
    return {
        "final_cpu_ms_p50": round(float(np.median(cpu)), 2),
        "final_cpu_ms_p95": round(float(np.percentile(cpu, 95)), 2),
        "partial_cpu_ms_p50": round(float(np.median([f["partial_cpu_ms"] for f in finals])), 2),
        "partial_cpu_ms_p95": round(float(np.percentile([f["partial_cpu_ms"] for f in finals], 95)), 2),
        "step_cpu_ms_p50": round(float(np.median(steps)), 3) if steps else None,
        "tail_steps_p50": float(np.median([len(f["steps_ms"]) for f in finals])),
    }


def main() -> int:
    from scripts.bench.machine import describe, load

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--below", type=int, nargs="*", default=[8192, 16384, 24576, 32768])
    p.add_argument("--words", type=int, nargs="*", default=[10000, 20000], help="word-list shortlists (wordfreq)")
    p.add_argument("--source", type=Path, default=REPO / "models" / "whisper-tiny.en")
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--reps", type=int, default=50, help="calls in a row per model and round (step CPU)")
    p.add_argument("--rounds", type=int, default=8, help="rounds of the step measurement (models take turns)")
    p.add_argument("--asterisk", type=int, default=40)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--json", type=Path, default=RESULTS / "vocab_shortlist.json")
    p.add_argument("--no-write", action="store_true")
    args = p.parse_args()
    dirs = model_dirs(args.below, args.words, args.source)
    record = {
        "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": describe(),
        "load": [load()],
        "command": command_line(),
        "pi4_fraction": PI4_FRACTION,
        "models": {
            label: {
                "dir": str(d.relative_to(REPO) if d.is_relative_to(REPO) else d),
                "kept_ids": (entry_of(d) or {}).get("kept"),
                "decoder_bytes": (d / "decoder.int8.tflite").stat().st_size,
            }
            for label, d in dirs.items()
        },
        "threads": {},
    }
    prof = Profiler()
    instrument(prof)
    for threads in args.threads:
        steps = step_cpu(dirs, threads, args.reps, args.rounds)
        runs = {
            label: measure(threads, prof, args.asterisk, 1.2, args.repeat, args.limit, d) for label, d in dirs.items()
        }
        full = {f["name"]: f for f in runs[FULL]["finals"]}
        out = {}
        for label, run in runs.items():
            differ = [
                {"name": f["name"], "full": full[f["name"]]["text"], "shortlist": f["text"]}
                for f in run["finals"]
                if f["tokens"] != full[f["name"]]["tokens"]
            ]
            out[label] = {"step": steps[label], **finals_of(run), "texts_differ": differ}
            figures = {k: v for k, v in out[label].items() if k != "texts_differ"}
            print(f"{threads} thread(s) {label}: {json.dumps(figures)}")
            print(f"  {len(differ)} of {len(run['finals'])} finals' tokens differ from {FULL}")
            for d in differ:
                print(f"    {d['name']}: {d['full']!r} -> {d['shortlist']!r}")
        record["threads"][str(threads)] = out
        record["load"].append(load())
    print(f"{record['machine']}; load {record['load']}")
    if not args.no_write:
        args.json.write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
