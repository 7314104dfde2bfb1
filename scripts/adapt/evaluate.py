"""Before/after WER on held-out utterances, with the runtime engine (int8 LiteRT + XNNPACK).

Conditions: clean; the room's noise (its held-out part only) at ROOM_SNRS; generic noises
(scripts/bench/audio_corpus.py) at OTHER. Every clip is mixed at its own speech-frame SNR with a fixed
seed, so the before and after models hear identical audio. Scoring: scripts/bench/scoring.py (jiwer
over Whisper's English normaliser), corpus WER = all errors / all reference words, overall, per talker
and over the talkers training never heard ("unheard": each alone has 4-71 words, too few to judge); the
talkers of data.NEW_SOURCES (274 and 110 words) only in their own group, "new unheard", so that "all" and
"unheard" are the figures of the wide check before they joined it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from scripts.adapt import data
from scripts.bench import audio_corpus

if TYPE_CHECKING:  # TensorFlow's and jiwer's side: scripts.adapt.seeds reads results in the plain .venv
    from scripts.adapt.features import Features
    from scripts.bench import scoring

ROOM_SNRS = (5.0, 0.0)
OTHER = (("white", 5.0), ("pink", 5.0), ("babble", 10.0))
# Issue 26's targets: in the room's noise WER at least ROOM_GAIN_POINTS and ROOM_GAIN_SHARE lower than
# tiny.en's; clean speech and the other noises not worse by more than OTHER_TOLERANCE points.
ROOM_GAIN_POINTS = 2.0
ROOM_GAIN_SHARE = 0.2
OTHER_TOLERANCE = 0.5


def condition_names(quick: bool = False) -> list[str]:
    return ["clean"] + [f"room {s:g} dB" for s in ROOM_SNRS] + ([] if quick else [f"{k} {s:g} dB" for k, s in OTHER])


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

    out = []
    t0 = time.monotonic()
    with WhisperEngine.load(model_dir) as engine:
        for i, c in enumerate(items, 1):
            out.append(engine.transcribe(feat.heard(c["audio"])).text)
            if i % 20 == 0 or i == len(items):
                progress(f"\r  {model_dir.name}: {i}/{len(items)} clips, {time.monotonic() - t0:.0f} s ")
    progress("\n")
    return out


UNHEARD = "unheard"  # the group of every held-out talker that training never heard
NEW = "new unheard"  # the talkers of data.NEW_SOURCES: scored apart, in neither "all" nor UNHEARD


def table(
    items: list[dict], hyps: list[str], trained: frozenset[str] = frozenset(), apart: frozenset[str] = frozenset()
) -> dict[str, dict[str, dict]]:
    """condition -> group ("all", a talker, or UNHEARD: every talker not in `trained`) -> {wer, words, errors};
    the talkers in `apart` count only in their own group and NEW."""
    from scripts.bench import scoring  # noqa: F811 (jiwer: .venv-adapt, .venv-bench)

    acc: dict[str, dict[str, scoring.Score]] = {}
    for c, h in zip(items, hyps, strict=True):
        s = scoring.score(c["text"], h)
        if c["speaker"] in apart:
            groups: tuple[str, ...] = (NEW, c["speaker"])
        else:
            groups = ("all", c["speaker"]) + (() if c["speaker"] in trained else (UNHEARD,))
        for g in groups:
            row = acc.setdefault(c["condition"], {})
            row[g] = row.get(g, scoring.ZERO) + s
    return {
        cond: {g: {"wer": round(s.wer, 2), "words": s.words, "errors": s.errors} for g, s in groups.items()}
        for cond, groups in acc.items()
    }


def before_after(
    before_dir: Path,
    after_dir: Path,
    utts: list[data.Utt],
    room_test: np.ndarray,
    feat: Features,
    quick,
    progress,
    trained: frozenset[str] = frozenset(),
    before: dict | None = None,
) -> dict:
    """`before`: tiny.en's table from an earlier run with the same check (earlier_before), or None to
    transcribe it here."""
    items = clips(utts, conditions(room_test, quick))
    apart = frozenset(u.speaker for u in utts if u.source in data.NEW_SOURCES)
    return {
        "utterances": len(utts),
        "talkers": sorted({u.speaker for u in utts}),
        "trained_talkers": sorted(trained),
        "apart_talkers": sorted(apart),
        "before": before or table(items, transcribe_all(before_dir, items, feat, progress), trained, apart),
        "after": table(items, transcribe_all(after_dir, items, feat, progress), trained, apart),
    }


def earlier_before(
    path: Path, noise_sha256: str, held_out: list[str], trained: list[str], quick: bool, denoise: str = "off"
) -> dict:
    """tiny.en's table from an earlier run's adaptation.json, if it heard the same held-out utterances,
    noise and talkers trained on, through the same front-end (the clips are mixed with fixed seeds, so its
    figures are this run's)."""
    import json

    try:
        old = json.loads(path.read_text())
        ev = old["evaluation"]
        same = old["noise"]["sha256"] == noise_sha256 and sorted(old["training"]["held_out"]) == sorted(held_out)
        same = same and ev.get("trained_talkers") == trained
        same = same and list(ev["before"]) == condition_names(quick)
        same = same and old["training"].get("denoise", "off") == denoise
    except (OSError, ValueError, KeyError) as e:
        raise SystemExit(f"--before-from {path}: not an adaptation.json with a check ({e})") from None
    if not same:
        raise SystemExit(
            f"--before-from {path}: checked on other utterances, noise, trained talkers conditions or front-end"
        )
    return ev["before"]


def group_names(result: dict) -> list[str]:
    """ "all", UNHEARD and NEW (where there are such talkers), then each talker."""
    first = next(iter(result["before"].values()), {})
    return ["all"] + [g for g in (UNHEARD, NEW) if g in first] + result["talkers"]


def markdown(result: dict) -> list[str]:
    before, after = result["before"], result["after"]
    names = group_names(result)
    lines = [
        "| condition | " + " | ".join(f"{g}: before -> after" for g in names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for cond in before:
        cells = []
        for g in names:
            b, a = before[cond].get(g), after[cond].get(g)
            cells.append("–" if b is None else f"{b['wer']:.1f} -> {a['wer']:.1f} %")
        lines.append(f"| {cond} | " + " | ".join(cells) + " |")
    return lines


def regressions(result: dict, tolerance: float = OTHER_TOLERANCE) -> list[str]:
    """Where the adapted model is worse than tiny.en by more than `tolerance` WER points (the issue's
    bound for clean speech and other noises), per condition and talker."""
    out = []
    for cond, groups in result["before"].items():
        for g, b in groups.items():
            a = result["after"][cond][g]
            if a["wer"] - b["wer"] > tolerance:
                out.append(f"{cond}, {g}: {b['wer']:.1f} -> {a['wer']:.1f} %")
    return out


def targets(before: dict[str, float], after: dict[str, float]) -> dict[str, bool]:
    """condition -> whether its target is met, from condition -> WER (%) before and after (one group)."""
    out = {}
    for cond, b in before.items():
        a = after[cond]
        if cond.startswith("room "):
            out[cond] = b - a >= ROOM_GAIN_POINTS and a <= (1 - ROOM_GAIN_SHARE) * b
        else:
            out[cond] = a - b <= OTHER_TOLERANCE
    return out
