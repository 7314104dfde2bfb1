"""`python -m scripts.bench.asr`'s scoring and report: corpus WER per condition (and group), compute on
short utterances, the markdown section of docs/benchmarks.md, the issue's targets."""

from __future__ import annotations

import shlex
from datetime import UTC, datetime

import numpy as np

from scripts.bench.machine import describe, load

SHORT_S = 8.0  # the targets are about utterances shorter than this
TITLES = {
    "engine": "ASR engine",
    "prompt": "ASR prompt and hotwords",
    "prompt-general": "ASR hotwords on general speech",
    "windows": "ASR window policy",
    "beams": "ASR beam size",
    "int8": "ASR int8 error",
    "noise": "ASR in loud noise: front-end and model (issue 22)",
    "room": "ASR in a room: talkers at their natural levels (issue 22)",
    "moonshine": "ASR: Moonshine base-en against Whisper (issue 22)",
    "shortlist": "ASR: decoder logits over a vocabulary shortlist (issue 23)",
    "shortlist-doubt": "ASR: a vocabulary shortlist, the full logits where in doubt (issue 23)",
    "base-targets": "ASR: Whisper base against tiny.en in noise (issue 22, stop 42)",
    "base-babble": "ASR: Whisper base in babble 10 dB, the levers (issue 22, stop 42)",
    "base-babble-combined": "ASR: Whisper base in babble 10 dB, levers combined (issue 22, stop 42)",
    "base-window": "ASR: Whisper base, DeepFilterNet 6 dB and a 10 s window in every condition (issue 22, stop 42)",
    "base-window-12": "ASR: Whisper base, a 10 s window with DeepFilterNet 12 and 9 dB, every condition "
    "(issue 22, stop 42)",
}


LEVEL_GROUPS = ("loud", "middle", "quiet")


def columns(clips: list[dict], conditions: list[str]) -> list[tuple[str, str, str | None]]:
    """(label, condition, group) of each WER column: one per condition, per group when there are several;
    talker-level groups (the room corpus) come after the condition's overall column (group None)."""
    groups = sorted({c["group"] for c in clips})
    if groups == ["real"]:
        return [(cond, cond, "real") for cond in conditions]
    if set(groups) <= set(LEVEL_GROUPS):
        return [(cond, cond, None) for cond in conditions] + [
            (f"{cond}, {g}", cond, g) for cond in conditions for g in LEVEL_GROUPS if g in groups
        ]
    return [(f"{cond}, {g}", cond, g) for g in groups for cond in conditions]


def summarise(result: dict, clips: list[dict], conditions: list[str]) -> dict:
    from scripts.bench.scoring import corpus_score

    ref = {(c["condition"], c["name"]): c for c in clips}
    out = {"wer": {}, "errors": {}}
    for label, cond, group in columns(clips, conditions):
        rows = [
            r for r in result["rows"] if r["condition"] == cond and group in (None, ref[(cond, r["name"])]["group"])
        ]
        s = corpus_score([ref[(cond, r["name"])]["reference"] for r in rows], [r["text"] for r in rows])
        out["wer"][label] = s.wer
        out["errors"][label] = [s.errors, s.words]
    short = [r for r in result["rows"] if ref[(r["condition"], r["name"])]["seconds"] < SHORT_S]
    cpu = np.array([r["cpu_ms"] for r in short])
    wall = np.array([r["wall_ms"] for r in short])
    out["short_utterances"] = len(short)
    out["cpu_ms_mean"] = float(cpu.mean())
    out["wall_ms_mean"] = float(wall.mean())
    out["wall_ms_p95"] = float(np.percentile(wall, 95))
    clean_short = [r for r in short if r["condition"] == "clean"]
    out["clean_wall_ms_p95"] = float(np.percentile([r["wall_ms"] for r in clean_short], 95)) if clean_short else None
    out["peak_rss_mb"] = result["peak_rss_mb"]
    return out


def markdown(
    section: str,
    results: list[dict],
    summaries: list[dict],
    clips: list[dict],
    conditions: list[str],
    command: str,
    threads: int,
    cli_rss: float | None,
    notes: list[str],
) -> str:
    n_utt = len({c["name"] for c in clips})
    speakers = sorted({c["speaker"] for c in clips})
    cols = [label for label, _, _ in columns(clips, conditions)]
    words = ", ".join(
        f"{summaries[0]['errors'][label][1]} ({label})" for label in cols if label.startswith(conditions[0])
    )
    lines = [
        f"## {TITLES.get(section, section)}",
        "",
        f"Measured {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')} on {describe()}; {load()} at the end; "
        f"{threads} inference thread per engine. The machine is shared with other jobs: wall times are "
        "noisy, CPU times less so; ARM boards will be several times slower.",
        "",
        "```",
        command,
        "```",
        "",
        f"Corpus: {n_utt} utterances ({words} reference words; speakers: {', '.join(speakers)}), "
        + (
            "`scripts/bench/domain_corpus.py` (real recordings, and espeak-ng as a separate synthetic group), each "
            "with its domain's prompt and hotwords where the engine uses them"
            if any("domain" in c for c in clips)
            else "real recordings, `scripts/bench/speech_corpus.py`"
        )
        + (
            "; the room recordings of `scripts/bench/live_noise_audio.py` (talkers at their natural levels, one noise "
            "level for the whole recording), each utterance cut out +- 0.25 s; groups: talker-level thirds. "
            if any(c.get("level_dbfs") is not None for c in clips)
            else "; noise from `scripts/bench/audio_corpus.py` (fan, music, TV: `scripts/bench/live_noise_audio.py`) "
            "mixed at "
            "the speech-frame SNR. "
        )
        + "WER: jiwer over Whisper's English normaliser (`scripts/bench/scoring.py`), all errors / all words. "
        f"Compute: CPU time per utterance shorter than {SHORT_S:.0f} s, every condition (whole "
        "`transcribe()`: log-mel, encoder, decoder; faster-whisper pads every window to 30 s).",
        "",
        "| engine | "
        + " | ".join(f"WER {c}" for c in cols)
        + f" | CPU ms / utt. < {SHORT_S:.0f} s | wall ms mean / p95 | peak RSS MB |",
        "|---|" + "---|" * (len(cols) + 3),
    ]
    for res, s in zip(results, summaries, strict=True):
        lines.append(
            f"| {res['label']} | "
            + " | ".join(f"{s['wer'][c]:.1f} %" for c in cols)
            + f" | {s['cpu_ms_mean']:.0f} | {s['wall_ms_mean']:.0f} / {s['wall_ms_p95']:.0f} "
            f"| {s['peak_rss_mb']:.0f} |"
        )
    lines.append("")
    if cli_rss is not None:
        lines.append(
            f"- `voxnode transcribe` on a 5.3 s clip (whole process, model load included, "
            f"PYTHONMALLOC=malloc, default config): peak RSS {cli_rss:.0f} MB (target <= 150 MB: "
            f"{'met' if cli_rss <= 150 else 'NOT met'})."
        )
    lines += notes
    # Transcripts where the engines disagree, clean condition only (all of them are in the JSON).
    cond = conditions[0]
    diff = []
    for c in clips:
        if c["condition"] != cond:
            continue
        texts = [
            next(r["text"] for r in res["rows"] if r["condition"] == cond and r["name"] == c["name"]) for res in results
        ]
        if len({t.strip().lower() for t in texts}) > 1:
            diff.append(f"| {c['name']} | {c['reference']} | " + " | ".join(texts) + " |")
    if diff:
        lines += [
            "",
            f"Transcripts that differ between the engines ({cond}):",
            "",
            "| clip | reference | " + " | ".join(r["label"] for r in results) + " |",
            "|---|---|" + "---|" * len(results),
        ] + diff
    return "\n".join(lines) + "\n"


def target_notes(results: list[dict], summaries: list[dict]) -> list[str]:
    """The issue's targets, when the engines they compare are in the run."""
    by = {r["label"]: s for r, s in zip(results, summaries, strict=True)}
    fw5 = by.get("faster-whisper beam_size=5")
    ours = by.get("voxnode")
    if not (fw5 and ours):
        return []
    notes = []
    for cond in ("clean", "babble 10 dB"):
        if cond in ours["wer"]:
            d = ours["wer"][cond] - fw5["wer"][cond]
            notes.append(
                f"- Target, {cond}: voxnode (defaults) WER {ours['wer'][cond]:.1f} % vs faster-whisper "
                f"beam 5 {fw5['wer'][cond]:.1f} % ({d:+.1f} points; target <= +0.3: "
                f"{'met' if d <= 0.3 else 'NOT met'})."
            )
    ratio = ours["cpu_ms_mean"] / fw5["cpu_ms_mean"]
    notes.append(
        f"- Target, compute on utterances < {SHORT_S:.0f} s: voxnode {ours['cpu_ms_mean']:.0f} ms vs "
        f"faster-whisper beam 5 {fw5['cpu_ms_mean']:.0f} ms CPU = {ratio:.2f} (target <= 0.33: "
        f"{'met' if ratio <= 1 / 3 else 'NOT met'})."
    )
    return notes


def shell_quote(arg: str) -> str:
    """Quote for a shell, readably: engine specs with 'label=...' go in double quotes."""
    if "'" in arg and not any(c in arg for c in '"$`\\'):
        return f'"{arg}"'
    return shlex.quote(arg)
