"""Issue 22's second pass: which lever moves Whisper's WER in loud noise? Each lever before/after
on the same clips, cheaper than a full bench/asr.py run (each clip is enhanced once per setting
and the enhanced audio is decoded under every decode setting).

    .venv-bench/bin/python -m scripts.bench.probe_noise_levers --conditions clean 'white 0 dB' 'babble 0 dB' \\
        'white 5 dB' 'pink 5 dB' --enhance df12 df24 --decode default beam5 norm

Corpus and noise: bench/asr.py's (`--asterisk 40`: the 50 real utterances, every clip mixed at its
own SNR; `--corpus room`: the room recordings, `--group quiet`: the quiet talkers only); `--every N`
keeps every Nth clip of each condition (exploring). Enhancement: the recognition path of `voxnode
transcribe` (frontend/recognition.py) with `frontend.denoise = "asr"`, DeepFilterNet at attenuation
limit N dB (`dfN`), at 12 dB with libDF's post-filter at beta N / 100 (`pfN`; the daemon does not
set it), or `off` (the high-pass alone). Decode settings: `default` (the [asr] defaults:
beam 3, fallback), `beamN`, `norm` (gain before the model: the clip's peak to -3 dBFS), joined by
`+`. `--model` names the recogniser(s) (`[asr] model` values: `tiny.en`, `tiny.en+NAME` for a
`voxnode adapt` variant under models/, or a folder; the `base` decode part keeps meaning whisper-base):
each enhanced clip is decoded by each model. Each line also gives the WER of Asterisk's talker
(allison: adapt's training talker, its benchmark prompts held out) and of the other talkers. Then
the noise verdicts, re-scored from each decode's no-speech probability and mean log-probability
(what a stricter guard would have dropped). Scoring: scripts/bench/scoring.py.

`--json F` writes every decode (with its clip's index in its condition and its CPU time); `--cache F`
reuses the decodes of an earlier `--json` (same condition, clip, enhancement and decode: only the
missing ones are enhanced and decoded; `--json` may name the same file). `--pick off,df12 ...`: per
clip, the decode of one of these enhancements the model is surest of (scripts/bench/noise_pick.py:
rules chosen on the even clips, reported on the odd ones, the oracle beside them).
"""

from __future__ import annotations

import argparse
import ctypes
import dataclasses
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from scripts import REPO
from scripts.bench import noise_pick, scoring
from scripts.bench.asr_corpus import build_corpus

DEFAULT_MODEL = "tiny.en"
TRAINED_TALKER = "allison"  # Asterisk's prompts: `voxnode adapt`'s bundled training speech

# Stricter noise verdicts than Whisper's (no-speech > 0.6 and mean log-prob < -1), scored offline.
GUARDS = {
    "whisper's": lambda r: False,
    "lp < -0.8": lambda r: r["logprob"] < -0.8,
    "nsp > 0.4": lambda r: r["no_speech"] > 0.4,
    "nsp > 0.3 and lp < -0.6": lambda r: r["no_speech"] > 0.3 and r["logprob"] < -0.6,
}


def enhanced(setting: str, audio: np.ndarray) -> np.ndarray:
    from voxnode.config import Config
    from voxnode.frontend.recognition import RecognitionFilter, recognition_audio
    from voxnode.stream.params import frontend_params

    params = frontend_params(Config())
    if setting == "off":
        return recognition_audio(params, audio)
    if setting.startswith("pf"):  # limit 12 dB and DeepFilterNet's post-filter at beta N / 100
        params = dataclasses.replace(params, denoise="asr", denoise_engine="deepfilter", denoise_floor_db=-12.0)
        f = RecognitionFilter(params)
        # The daemon does not set the post-filter: reach into this one instance's libDF state.
        df = f._fe._enhancer
        df._lib.df_set_post_filter_beta.argtypes = [ctypes.c_void_p, ctypes.c_float]
        df._lib.df_set_post_filter_beta(df._st, float(setting[2:]) / 100)
        return np.concatenate([f.process(audio), f.flush()])
    if not setting.startswith("df"):
        raise SystemExit(f"--enhance {setting}: off, dfN or pfN")
    limit = float(setting[2:])
    params = dataclasses.replace(params, denoise="asr", denoise_engine="deepfilter", denoise_floor_db=-limit)
    return recognition_audio(params, audio)


def engine_for(setting: str, model: str = DEFAULT_MODEL):
    from voxnode.asr.whisper.engine import WhisperEngine, default_options
    from voxnode.asr.whisper.files import model_dir_name

    over: dict = {}
    for part in setting.split("+"):
        if part.startswith("beam"):
            over["beam_size"] = int(part[4:])
        elif part not in ("default", "norm", "base"):
            raise SystemExit(f"--decode {setting}: default, beamN, norm or base, joined by +")
    folder = REPO / "models" / ("whisper-base" if "base" in setting.split("+") else model_dir_name(model))
    if not (folder / "manifest.json").is_file():
        raise SystemExit(f"--model {model}: no model folder at {folder}")
    return WhisperEngine.load(folder, num_threads=1, options=dataclasses.replace(default_options(), **over))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--conditions", nargs="+", required=True)
    p.add_argument("--corpus", default="general", choices=("general", "room"))
    p.add_argument("--asterisk", type=int, default=40)
    p.add_argument("--group", help="room corpus: keep only this talker-level third (loud, middle, quiet)")
    p.add_argument("--every", type=int, default=1)
    p.add_argument("--enhance", nargs="+", default=["df12"])
    p.add_argument("--decode", nargs="+", default=["default"])
    p.add_argument("--model", nargs="+", default=[DEFAULT_MODEL], help="tiny.en, tiny.en+NAME or a folder")
    p.add_argument("--json", type=Path, help="write every decode here")
    p.add_argument("--cache", type=Path, help="reuse the decodes of an earlier --json")
    p.add_argument("--pick", nargs="+", default=[], help="enhancements to pick from per clip, joined by ,")
    args = p.parse_args()
    for spec in args.pick:
        if missing := set(spec.split(",")) - set(args.enhance):
            raise SystemExit(f"--pick {spec}: not in --enhance: {', '.join(sorted(missing))}")
    cached = {_key(r): r for r in noise_pick.load_decodes(args.cache)} if args.cache and args.cache.exists() else {}

    with tempfile.TemporaryDirectory() as tmp:
        clips = build_corpus(Path(tmp), args.asterisk, args.conditions, args.corpus)
        for c in clips:
            c["audio"] = np.load(c["path"])
    seen: dict[str, int] = defaultdict(int)
    kept = []
    for c in clips:
        c["index"] = seen[c["condition"]]  # the clip's place in its condition (noise_pick splits by it)
        seen[c["condition"]] += 1
        if c["index"] % args.every == 0 and (not args.group or c["group"] == args.group):
            kept.append(c)
    engines: dict = {}
    rows = []
    for setting in args.enhance:
        todo = [
            c
            for c in kept
            if any(
                _key({**c, "enhance": setting, "decode": d, "model": m}) not in cached
                for d in args.decode
                for m in args.model
            )
        ]
        audio = {id(c): enhanced(setting, c["audio"]) for c in todo}  # enhanced only where a decode is missing
        for d, m in [(d, m) for m in args.model for d in args.decode]:
            for c in kept:
                key = _key({**c, "enhance": setting, "decode": d, "model": m})
                if key in cached:
                    rows.append(cached[key])
                    continue
                engine = engines.get((d, m)) or engines.setdefault((d, m), engine_for(d, m))
                a = audio[id(c)]
                gain = 0.7 / max(1e-4, float(np.max(np.abs(a)))) if "norm" in d.split("+") else 1.0
                t0 = time.process_time()
                r = engine.transcribe(a * np.float32(gain))
                cpu_ms = (time.process_time() - t0) * 1000
                rows.append(
                    {
                        "condition": c["condition"],
                        "name": c["name"],
                        "index": c["index"],
                        "speaker": c["speaker"],
                        "reference": c["reference"],
                        "enhance": setting,
                        "decode": d,
                        "model": m,
                        "text": r.text,
                        "no_speech": r.no_speech_prob,
                        "logprob": r.confidence,
                        "stop": r.stop_reason,
                        "cpu_ms": round(cpu_ms, 1),
                    }
                )
            for cond in args.conditions:
                sel = [
                    r for r in rows if (r["condition"], r["enhance"], r["decode"], _model(r)) == (cond, setting, d, m)
                ]
                refs = [r["reference"] for r in sel]
                s = scoring.corpus_score(refs, [r["text"] for r in sel])
                talkers = "  ".join(
                    f"{g} {scoring.corpus_score([r['reference'] for r in rs], [r['text'] for r in rs]).wer:5.1f} %"
                    for g, rs in _by_talker(sel).items()
                )
                guards = "  ".join(
                    f"{g}: {scoring.corpus_score(refs, ['' if f(r) else r['text'] for r in sel]).wer:.1f}"
                    for g, f in GUARDS.items()
                    if g != "whisper's"
                )
                print(
                    f"{m:14s} {setting:6s} {d:12s} {cond:18s} n={len(sel):3d} WER {s.wer:5.1f} % "
                    f"(S {s.substitutions} D {s.deletions} I {s.insertions}; {s.words} words)  {talkers}  "
                    f"guards: {guards}",
                    flush=True,
                )
        if args.json:  # after each enhancement, with the cache's other decodes: a run cut short loses little
            every = {**cached, **{_key(r): r for r in rows}}
            args.json.write_text(json.dumps(list(every.values()), indent=1) + "\n")
    for engine in engines.values():
        engine.close()
    for spec in args.pick:
        first = [r for r in rows if _model(r) == args.model[0]]  # the first --model's decodes
        print(noise_pick.report(first, spec.split(","), args.decode[0], args.conditions), flush=True)
    return 0


def _model(row: dict) -> str:
    return row.get("model", DEFAULT_MODEL)  # decodes saved before --model were tiny.en's


def _key(row: dict) -> tuple:
    return (row["condition"], row["name"], row["enhance"], row["decode"], _model(row))


def _by_talker(rows: list[dict]) -> dict[str, list[dict]]:
    """The trained talker's rows and the others' (either may be empty with --group/--every)."""
    groups = {TRAINED_TALKER: [r for r in rows if r["speaker"] == TRAINED_TALKER]}
    groups["others"] = [r for r in rows if r["speaker"] != TRAINED_TALKER]
    return {g: rs for g, rs in groups.items() if rs}


if __name__ == "__main__":
    sys.exit(main())
