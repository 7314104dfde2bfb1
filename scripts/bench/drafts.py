"""What a draft (the last partial's tokens) buys a final: WER and decode time, with and without.

Live, every decode of an utterance is handed the tokens of the one before it (`[asr] draft`,
asr/search.verified_draft): the decoder checks them all in its one prefill call and decodes only
what follows the first disagreement. Here each real utterance (scripts/bench/speech_corpus.py), clean
and in noise mixed at its own SNR, is decoded as the daemon decodes it at the end of speech:

- the partial just before: greedy, of the audio minus `--lag` seconds (the partial interval,
  500 ms by default: the last partial misses up to that much of the end);
- then the final of the whole audio, at each setting: beam 3 and greedy, without and with that
  partial's tokens as the draft. Each final comes right after a partial (as live: the window
  change that costs is counted).

It prints and saves (scripts/bench/results/drafts_benchmark.json, and the "Drafts" section of docs/benchmarks.md)
WER (Whisper's English normaliser), the median / p95 wall time of the final's `transcribe()`, the
share of draft tokens accepted, and how many greedy texts differ with a draft (0 expected: the
verification is exact up to float rounding between one call and many).

    .venv-bench/bin/python -m scripts.bench.drafts --threads 1
    python -m scripts.bench.emulate_board pi4 -- .venv-bench/bin/python -m scripts.bench.drafts --threads 4 --label pi4
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from scripts import REPO, RESULTS

TITLE = "Drafts: finals decoded from the last partial"
# name -> (beam size, with the draft, the final's draft gate: asr.draft_margin, None = the default)
SETTINGS: dict[str, tuple[int, bool, float | None]] = {
    "beam 3": (3, False, None),
    "beam 3 + draft": (3, True, 0.0),
    "beam 3 + gated draft": (3, True, None),
    "greedy": (1, False, None),
    "greedy + draft": (1, True, None),
}
CONDITIONS = {"clean": None, "babble 10 dB": ("babble", 10.0), "pink 5 dB": ("pink", 5.0)}


def head_and_draft(engine, audio: np.ndarray, lag_s: float) -> tuple[np.ndarray, list[int]]:
    """The utterance as the daemon has it at the end of speech: the audio its last partial heard (all
    but the last `lag_s` seconds, at least 1 s) and that partial's tokens, the final's draft."""
    head = audio[: max(16000, len(audio) - int(lag_s * 16000))]
    return head, engine.transcribe(head, role="partial").tokens


def measure(
    threads: int,
    conditions: list[str],
    n_asterisk: int,
    lag_s: float,
    margins: list[float],
    texts_out: dict | None = None,
) -> dict:
    from scripts.bench import audio_corpus, scoring, speech_corpus
    from scripts.bench.asr_corpus import clip_noise
    from voxnode.asr import default_model_dir
    from voxnode.asr.whisper.engine import WhisperEngine, default_options

    settings = dict(SETTINGS)
    settings.update({f"beam 3 + draft, margin {m:g}": (3, True, m) for m in margins})
    gate = default_options().draft_margin
    model = default_model_dir(None, "tiny.en")
    engine = WhisperEngine.load(model, threads)
    # One engine per other margin (asr.draft_margin is an engine option), each given the same partial
    # before its final as the live pipeline does.
    engines = {gate: engine}
    for _, _, m in settings.values():
        if m is not None and m not in engines:
            engines[m] = WhisperEngine.load(model, threads, options=replace(default_options(), draft_margin=m))
    utts = speech_corpus.real_speech(n_asterisk=n_asterisk)
    exclude = {u.name for u in utts}
    out: dict = {}
    for cond in conditions:
        texts: dict[str, list[str]] = {s: [] for s in settings}
        walls: dict[str, list[float]] = {s: [] for s in settings}
        drafted = dict.fromkeys(settings, 0)
        accepted = dict.fromkeys(settings, 0)
        for k, u in enumerate(utts):
            audio = u.audio
            if CONDITIONS[cond] is not None:
                kind, snr = CONDITIONS[cond]
                audio = audio_corpus.mix(audio, clip_noise(kind, len(audio), 1000 + k, exclude), snr)
            audio = (audio / 32768.0).astype(np.float32)
            head, draft = head_and_draft(engine, audio, lag_s)
            for name, (beam, with_draft, margin) in settings.items():
                eng = engines[gate if margin is None else margin]
                eng.transcribe(head, role="partial")  # as live: a partial just before the final
                t0 = time.perf_counter()
                r = eng.transcribe(audio, role="final", beam_size=beam, draft=draft if with_draft else ())
                walls[name].append((time.perf_counter() - t0) * 1000)
                texts[name].append(r.text)
                drafted[name] += r.draft_tokens
                accepted[name] += r.draft_accepted
        refs = [u.text for u in utts]
        rows = {}
        for name, (beam, with_draft, _) in settings.items():
            w = np.array(walls[name])
            plain = texts["beam 3" if beam == 3 else "greedy"]
            rows[name] = {
                "wer": round(scoring.corpus_score(refs, texts[name]).wer, 2),
                "median_ms": round(float(np.median(w)), 1),
                "p95_ms": round(float(np.percentile(w, 95)), 1),
                # texts other than the same beam's without a draft (the draft decided them)
                "texts_changed": sum(a != b for a, b in zip(plain, texts[name], strict=True)),
            }
            if with_draft:
                rows[name]["draft_acceptance"] = round(accepted[name] / drafted[name], 3) if drafted[name] else None
        rows["draft_acceptance"] = rows["beam 3 + draft"]["draft_acceptance"]
        pairs = zip(texts["greedy"], texts["greedy + draft"], strict=True)
        rows["greedy_texts_changed"] = sum(a != b for a, b in pairs)
        out[cond] = rows
        print(cond, json.dumps(rows), flush=True)
        if texts_out is not None:
            texts_out[cond] = {"refs": refs, **texts}
    return {"utterances": len(utts), "final_draft_margin": gate, "conditions": out}


def main() -> int:
    from scripts.bench.docs_section import replace_section
    from scripts.bench.machine import describe

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--asterisk", type=int, default=40, help="Asterisk prompts in the corpus (plus pocketsphinx)")
    p.add_argument("--lag", type=float, default=0.5, help="seconds of the end the last partial did not hear")
    p.add_argument("--conditions", default=",".join(CONDITIONS), help=f"of {', '.join(CONDITIONS)}")
    p.add_argument("--label", default="x86", help="where it ran (x86, or an emulated board)")
    p.add_argument("--json", type=Path, default=RESULTS / "drafts_benchmark.json")
    p.add_argument("--no-write", action="store_true")
    p.add_argument("--margins", default="", help="extra finals with the draft gated at these margins (nats), e.g. 1,2")
    p.add_argument("--texts", type=Path, help="also save every final's text here (JSON)")
    args = p.parse_args()
    conditions = [c.strip() for c in args.conditions.split(",") if c.strip()]
    unknown = [c for c in conditions if c not in CONDITIONS]
    if unknown:
        p.error(f"--conditions: unknown {unknown}; known: {list(CONDITIONS)}")
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load = os.getloadavg()
    try:
        margins = [float(m) for m in args.margins.split(",") if m.strip()]
    except ValueError:
        p.error(f"--margins: not a list of numbers: {args.margins!r}")
    texts: dict = {}
    res = measure(args.threads, conditions, args.asterisk, args.lag, margins, texts)
    if args.texts:
        args.texts.write_text(json.dumps(texts, indent=1) + "\n")
    run = {
        "measured": started,
        "machine": describe(),
        "label": args.label,
        "threads": args.threads,
        "lag_s": args.lag,
        "load": [round(load[0], 2), round(os.getloadavg()[0], 2)],
        "command": "python -m scripts.bench.drafts " + " ".join(sys.argv[1:]),
        **res,
    }
    if args.no_write:
        return 0
    runs = json.loads(args.json.read_text()) if args.json.exists() else {}
    runs[f"{args.label}, {args.threads} thread(s)"] = run
    args.json.write_text(json.dumps(runs, indent=1) + "\n")
    lines = [
        f"## {TITLE}",
        "",
        "Each final right after a greedy partial of all but the last "
        f"{args.lag:g} s, whose tokens are the draft (`[asr] draft`); real utterances, each mixed at its own SNR; "
        "WER with Whisper's English normaliser; wall ms of the final's `transcribe()` (log-mel, encoder, "
        "prefill, search). `scripts/bench/drafts.py` (commands in each row's JSON, "
        "scripts/bench/results/drafts_benchmark.json).",
        "",
        "| run | condition | beam 3: WER, ms median / p95 | beam 3 + draft | beam 3 + gated draft | greedy "
        "| greedy + draft | draft tokens accepted (gated) | beam 3 texts the draft changed (gated) "
        "| greedy texts changed |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key, r in runs.items():
        n = r["utterances"]
        for cond, row in r["conditions"].items():
            cells = [
                f"{row[s]['wer']:.1f} %, {row[s]['median_ms']:.0f} / {row[s]['p95_ms']:.0f}" if s in row else "–"
                for s in SETTINGS
            ]
            gated = row.get("beam 3 + gated draft")
            plain = row["beam 3 + draft"]
            taken = f"{row['draft_acceptance']:.0%}" + (f" ({gated['draft_acceptance']:.0%})" if gated else "")
            changed = (
                f"{plain['texts_changed']} ({gated['texts_changed']}) of {n}"
                if "texts_changed" in plain and gated
                else "–"
            )
            lines.append(
                f"| {key} (load {r['load'][0]:.1f}; {r['measured']}) | {cond} | "
                + " | ".join(cells)
                + f" | {taken} | {changed} | {row['greedy_texts_changed']} of {n} |"
            )
    lines += ["", f"Machine: {run['machine']}."]
    section = "\n".join(lines) + "\n"
    print(section)
    replace_section(REPO / "docs" / "benchmarks.md", TITLE, section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
