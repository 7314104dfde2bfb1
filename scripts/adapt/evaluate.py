"""Before/after WER on held-out utterances, with the runtime engine (int8 LiteRT + XNNPACK).

Conditions: clean; the room's noise (its held-out part only) at ROOM_SNRS; generic noises
(scripts/bench/audio_corpus.py) at OTHER. Every clip is mixed at its own speech-frame SNR with a fixed
seed, so the before and after models hear identical audio. Scoring: scripts/bench/scoring.py (jiwer
over Whisper's English normaliser), corpus WER = all errors / all reference words, overall and
per talker.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from scripts.adapt import data
from scripts.adapt.features import Features
from scripts.bench import audio_corpus, scoring

ROOM_SNRS = (5.0, 0.0)
OTHER = (("white", 5.0), ("pink", 5.0), ("babble", 10.0))


def conditions(room_noise: np.ndarray, quick: bool = False) -> list[tuple[str, np.ndarray | None, float | None]]:
    conds: list[tuple[str, np.ndarray | None, float | None]] = [("clean", None, None)]
    conds += [(f"room {s:g} dB", room_noise, s) for s in ROOM_SNRS]
    if not quick:
        n = 60 * data.RATE
        conds += [(f"{kind} {s:g} dB", audio_corpus.noise(kind, n, seed=7), s) for kind, s in OTHER]
    return conds


def clips(utts: list[data.Utt], conds) -> list[dict]:
    out = []
    for c, (name, noise, snr) in enumerate(conds):
        rng = np.random.default_rng(1000 + c)
        for u in utts:
            audio = u.audio if noise is None else data.mixed(u.audio, noise, snr, rng)
            out.append({"condition": name, "speaker": u.speaker, "name": u.name, "text": u.text, "audio": audio})
    return out


def transcribe_all(model_dir: Path, items: list[dict], feat: Features, progress) -> list[str]:
    from voxnode.asr.whisper.engine import WhisperEngine

    engine = WhisperEngine.load(model_dir)
    out = []
    t0 = time.monotonic()
    for i, c in enumerate(items, 1):
        out.append(engine.transcribe(feat.heard(c["audio"])).text)
        if i % 20 == 0 or i == len(items):
            progress(f"\r  {model_dir.name}: {i}/{len(items)} clips, {time.monotonic() - t0:.0f} s ")
    progress("\n")
    return out


def table(items: list[dict], hyps: list[str]) -> dict[str, dict[str, dict]]:
    """condition -> group ("all" or a talker) -> {wer, words, errors}."""
    acc: dict[str, dict[str, scoring.Score]] = {}
    for c, h in zip(items, hyps, strict=True):
        s = scoring.score(c["text"], h)
        for g in ("all", c["speaker"]):
            row = acc.setdefault(c["condition"], {})
            row[g] = row.get(g, scoring.ZERO) + s
    return {
        cond: {g: {"wer": round(s.wer, 2), "words": s.words, "errors": s.errors} for g, s in groups.items()}
        for cond, groups in acc.items()
    }


def before_after(
    before_dir: Path, after_dir: Path, utts: list[data.Utt], room_test: np.ndarray, feat: Features, quick, progress
) -> dict:
    items = clips(utts, conditions(room_test, quick))
    return {
        "utterances": len(utts),
        "talkers": sorted({u.speaker for u in utts}),
        "before": table(items, transcribe_all(before_dir, items, feat, progress)),
        "after": table(items, transcribe_all(after_dir, items, feat, progress)),
    }


def markdown(result: dict) -> list[str]:
    before, after = result["before"], result["after"]
    groups = ["all"] + result["talkers"]
    lines = [
        "| condition | " + " | ".join(f"{g}: before -> after" for g in groups) + " |",
        "|---|" + "---|" * len(groups),
    ]
    for cond in before:
        cells = []
        for g in groups:
            b, a = before[cond].get(g), after[cond].get(g)
            cells.append("–" if b is None else f"{b['wer']:.1f} -> {a['wer']:.1f} %")
        lines.append(f"| {cond} | " + " | ".join(cells) + " |")
    return lines


def regressions(result: dict, tolerance: float = 0.5) -> list[str]:
    """Where the adapted model is worse than tiny.en by more than `tolerance` WER points (the issue's
    bound for clean speech and other noises), per condition and talker."""
    out = []
    for cond, groups in result["before"].items():
        for g, b in groups.items():
            a = result["after"][cond][g]
            if a["wer"] - b["wer"] > tolerance:
                out.append(f"{cond}, {g}: {b['wer']:.1f} -> {a['wer']:.1f} %")
    return out
