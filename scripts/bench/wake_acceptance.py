"""The wake-word benchmark's acceptance (scripts/bench/wake.py): how often the detector fires on the phrase,
on the real recordings in every noise and SNR, and on the synthetic set (``--synthetic``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from scripts.bench import audio_corpus as ac
from scripts.bench import speech_corpus as sc
from scripts.bench.wake_audio import (
    impulse_response,
    noisy_clip,
    recording_trials,
    recordings,
    speak,
)
from scripts.bench.wake_conditions import (
    ACCEPT_NOISES,
    ACCEPT_SNR,
    ACCEPT_SNRS,
    PHRASES,
    PITCHES,
    RATE,
    RATES,
    ROOMS,
    VOICES,
)
from scripts.bench.wake_detect import accepted, cutoffs_for, detect, speech_flags


def accepted_in_noise(
    model: str, xnn: bool, x: np.ndarray, phrase_len: int, kind: str, clip_id: int, cuts, music
) -> dict[str, bool]:
    """Whether the detector fires on the phrase `x` mixed with `kind` noise at ACCEPT_SNR, per cutoff label."""
    noisy, start, end = noisy_clip(x, phrase_len, kind, ACCEPT_SNR, clip_id, music)
    return accepted(detect(model, noisy, xnn).series, start, end, cuts)


def acceptance_recorded(models: list[str], folder: Path, skip: bool = True) -> dict:
    """Acceptance on recordings of people saying the phrases (FOLDER/<model>/*.wav, one phrase per
    file, as recorded in a room), each mixed with every ACCEPT_NOISES kind at every ACCEPT_SNRS,
    after 2-2.8 s of the noise alone (the front-ends settle, as in a room). Per cutoff; with `skip`,
    also with the detector resting on what the daemon's front-end calls silence (wake.skip_silence)."""
    music = [a for _, a in sc.music_tracks()]
    variants = ["all_frames"] + (["skip_silence"] if skip else [])
    results = {}
    for model in models:
        phrases = recordings(folder, model)
        if not phrases:
            print(f"accept {model} (recorded): no WAV files in {folder / model}", flush=True)
            continue
        cuts = cutoffs_for(model)
        ok = {v: {label: {} for label, _ in cuts} for v in variants}  # variant -> label -> condition -> count
        for i, x in enumerate(phrases):
            for snr, kind, clip, start, end in recording_trials(i, x, music):
                flags = speech_flags(clip) if skip else None
                for v in variants:
                    series = detect(model, clip, True, flags if v == "skip_silence" else None).series
                    for label, hit in accepted(series, start, end, cuts).items():
                        cond = f"{kind} {snr} dB"
                        ok[v][label][cond] = ok[v][label].get(cond, 0) + hit
        n = len(phrases)
        out: dict = {"recordings": n, "clips": n * len(ACCEPT_SNRS) * len(ACCEPT_NOISES), "cutoffs": {}}
        for label, c in cuts:
            entry: dict = {"cutoff": c}
            for v in variants:
                by = ok[v][label]
                entry[v] = {
                    "percent_by_snr": {
                        str(snr): round(100 * sum(by[f"{k} {snr} dB"] for k in ACCEPT_NOISES) / (n * 4), 1)
                        for snr in ACCEPT_SNRS
                    },
                    "percent_by_condition": {cond: round(100 * k / n, 1) for cond, k in by.items()},
                }
            out["cutoffs"][label] = entry
        results[model] = out
        for label, e in out["cutoffs"].items():
            print(
                f"accept {model} (recorded, {n}) at {label} ({e['cutoff']}): "
                + "; ".join(
                    f"{v}: " + " ".join(f"{snr} dB {p} %" for snr, p in e[v]["percent_by_snr"].items())
                    for v in variants
                ),
                flush=True,
            )
    return results


def acceptance(models: list[str]) -> dict:
    music = [a for _, a in sc.music_tracks()]
    rng = np.random.default_rng(7)
    results = {}
    configs = [(m, True) for m in models] + ([("okay_nabu", False)] if "okay_nabu" in models else [])
    for model, xnn in configs:
        phrase = PHRASES[model]
        cuts = cutoffs_for(model)
        by: dict[str, list[int]] = {}  # at the model's own cutoff
        ok_at = {label: 0 for label, _ in cuts}
        n = 0
        clip_id = 0
        for engine, voice in VOICES:
            for speed in RATES:
                for pitch in PITCHES:
                    dry = ac.at_dbfs(speak(phrase, engine, voice, speed, pitch), -26)
                    for room, spec in ROOMS.items():
                        if spec is None:
                            x = dry
                        else:
                            x = np.convolve(dry, impulse_response(*spec, rng))[: len(dry) + RATE // 2]
                        x = ac.at_dbfs(x.astype(np.float32), -26)
                        for kind in ACCEPT_NOISES:
                            clip_id += 1
                            oks = accepted_in_noise(model, xnn, x, len(dry), kind, clip_id, cuts, music)
                            n += 1
                            for label, _ in cuts:
                                ok = oks[label]
                                ok_at[label] += ok
                                if label != "model":
                                    continue
                                tags = (
                                    engine,
                                    f"voice {voice}",
                                    f"rate {speed}",
                                    f"pitch {pitch}",
                                    f"room {room}",
                                    f"noise {kind}",
                                )
                                for k in tags:
                                    by.setdefault(k, [0, 0])
                                    by[k][0] += ok
                                    by[k][1] += 1
        key = f"{model}{'' if xnn else ' (reference kernels)'}"
        results[key] = {
            "clips": n,
            "cutoffs": {
                label: {"cutoff": c, "accepted": ok_at[label], "percent": round(100 * ok_at[label] / n, 1)}
                for label, c in cuts
            },
            "by_at_model_cutoff": {k: round(100 * a / b, 1) for k, (a, b) in by.items()},
        }
        print(
            f"accept {key}: "
            + ", ".join(f"{v['percent']} % at {k} ({v['cutoff']})" for k, v in results[key]["cutoffs"].items()),
            flush=True,
        )
    return results
