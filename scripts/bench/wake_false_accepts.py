"""The wake-word benchmark's false accepts (scripts/bench/wake.py): the audio of each source (recorded
speech with pauses under noise, television dialogue over music, music alone) and the detections on it."""

from __future__ import annotations

import numpy as np

from scripts.bench import audio_corpus as ac
from scripts.bench import speech_corpus as sc
from scripts.bench.wake_audio import noise_for
from scripts.bench.wake_conditions import FA_NOISES, FA_SNRS, RATE, WAKE_WORDS
from scripts.bench.wake_detect import cutoffs_for, detect, events, speech_flags


def loop_speech(utts, target: int, rng, gap_s: tuple[float, float], level: tuple[float, float]):
    """`utts` played in random order, pass after pass (each at another speed 0.92-1.08), at random
    levels with random pauses, up to `target` samples -> (audio, speech seconds, passes)."""
    import soxr

    parts: list[np.ndarray] = []
    total, passes, speech_s = 0, 0, 0.0
    while total < target:
        speed = float(rng.uniform(0.92, 1.08))
        for i in rng.permutation(len(utts)):
            x = utts[i].audio
            x = soxr.resample(x, RATE, RATE / speed).astype(np.float32) if abs(speed - 1) > 1e-3 else x
            x = ac.at_dbfs(x, float(rng.uniform(*level)))
            gap = ac.silence(float(rng.uniform(*gap_s)))
            parts += [x, gap]
            speech_s += len(x) / RATE
            total += len(x) + len(gap)
            if total >= target:
                break
        passes += 1
    return np.concatenate(parts)[:target], speech_s, passes


def english_utterances():
    utts = [u for u in sc.pocketsphinx() + list(sc.asterisk(0.5, 30.0)) if not WAKE_WORDS & set(u.text.lower().split())]
    if not utts:
        raise SystemExit("no speech corpus: make deps-corpus (pocketsphinx-testdata, asterisk-core-sounds-en*)")
    return utts


def with_noise_blocks(clean: np.ndarray, blocks: list[tuple[str, float]], music, seed: int) -> np.ndarray:
    """`clean` split into equal blocks, each with one continuous noise kind at its SNR below the speech."""
    edges = np.linspace(0, len(clean), len(blocks) + 1).astype(int)
    labels = ac.label_speech(clean)
    frames = clean[: len(labels) * 320].reshape(len(labels), 320)
    p_speech = float(np.mean(frames[labels].astype(np.float64) ** 2))
    out = clean.copy()
    for b, (kind, snr) in enumerate(blocks):
        lo, hi = edges[b], edges[b + 1]
        nz = noise_for(kind, hi - lo, seed + b, music).astype(np.float64)
        scale = np.sqrt(p_speech / ((np.mean(nz**2) + 1e-12) * 10 ** (snr / 10)))
        out[lo:hi] += (scale * nz).astype(np.float32)
    return np.clip(out, -32768, 32767).astype(np.float32)


def fa_audio(minutes: float, seed: int = 0) -> tuple[np.ndarray, dict]:
    """Real recorded English speech with pauses, under continuous pink, babble, HVAC or music noise."""
    utts = english_utterances()
    music = [a for _, a in sc.music_tracks()]
    clean, speech_s, passes = loop_speech(
        utts, int(minutes * 60 * RATE), np.random.default_rng(seed), (0.2, 2.5), (-34, -20)
    )
    blocks = [(k, s) for s in FA_SNRS for k in FA_NOISES]
    out = with_noise_blocks(clean, blocks, music, 100)
    info = {
        "minutes": round(len(out) / RATE / 60, 1),
        "speech_minutes": round(min(speech_s, len(out) / RATE) / 60, 1),
        "distinct_utterances": len(utts),
        "distinct_speech_minutes": round(sum(u.duration_s for u in utts) / 60, 1),
        "passes": passes,
        "noise_blocks": [f"{k} {s} dB" for k, s in blocks],
    }
    return out, info


def tv_audio(minutes: float, seed: int = 1) -> tuple[np.ndarray, dict]:
    """Television: dialogue with hardly a pause (English and the Asterisk French, Spanish and Italian
    voices, 0.05-0.6 s apart) over a music bed at 15, 10, 5 and 0 dB below it, in turn."""
    from scripts.bench import language_corpus as lc

    utts = english_utterances()
    for lang in ("fr", "es", "it"):
        utts += [u for u in lc.prompts(lang)[:120] if not WAKE_WORDS & set(u.text.lower().split())]
    music = [a for _, a in sc.music_tracks()]
    clean, speech_s, passes = loop_speech(
        utts, int(minutes * 60 * RATE), np.random.default_rng(seed), (0.05, 0.6), (-30, -22)
    )
    blocks = [("music", snr) for snr in (15, 10, 5, 0)]
    out = with_noise_blocks(clean, blocks, music, 200)
    info = {
        "minutes": round(len(out) / RATE / 60, 1),
        "speech_minutes": round(min(speech_s, len(out) / RATE) / 60, 1),
        "distinct_utterances": len(utts),
        "passes": passes,
        "noise_blocks": [f"{k} {s} dB" for k, s in blocks],
    }
    return out, info


def music_audio(minutes: float, seed: int = 2) -> tuple[np.ndarray, dict]:
    """Music alone: the Asterisk music-on-hold tracks (real recorded music, 18 distinct minutes),
    pass after pass, each track at another speed 0.85-1.15 (pitch moves with it) and level
    -30..-16 dBFS, over a quiet room (pink noise at -60 dBFS)."""
    import soxr

    tracks = sc.music_tracks()
    rng = np.random.default_rng(seed)
    target = int(minutes * 60 * RATE)
    parts, total, passes = [], 0, 0
    while total < target:
        for i in rng.permutation(len(tracks)):
            speed = float(rng.uniform(0.85, 1.15))
            x = soxr.resample(tracks[i][1], RATE, RATE / speed).astype(np.float32)
            parts.append(ac.at_dbfs(x, float(rng.uniform(-30, -16))))
            total += len(x)
        passes += 1
    out = np.concatenate(parts)[:target] + ac.at_dbfs(ac.noise("pink", target, seed=seed), -60)
    info = {
        "minutes": round(target / RATE / 60, 1),
        "distinct_minutes": round(sum(len(a) for _, a in tracks) / RATE / 60, 1),
        "passes": passes,
        "tracks": [n for n, _ in tracks],
    }
    return np.clip(out, -32768, 32767).astype(np.float32), info


FA_SOURCES = {"speech": fa_audio, "tv": tv_audio, "music": music_audio}


def false_accepts(models: list[str], minutes: float, sources: list[str], skip: bool = True) -> dict:
    """Per source (`minutes` of each) and model: false accepts per cutoff, with every frame heard
    and (with `skip`) with the detector resting on silence as the daemon's closed gate does."""
    out: dict = {"sources": {}, "models": {m: {} for m in models}}
    for source in sources:
        audio, info = FA_SOURCES[source](minutes)
        hours = len(audio) / RATE / 3600
        out["sources"][source] = info
        flags = speech_flags(audio) if skip else None
        if flags is not None:
            info["speech_frames_percent"] = round(100 * float(flags.mean()), 1)
        edges = np.linspace(0, len(audio) / RATE, len(info.get("noise_blocks", [""])) + 1)
        for model in models:
            res: dict = {"hours": round(hours, 3)}
            for variant in ["all_frames"] + (["skip_silence"] if skip else []):
                r = detect(model, audio, True, flags if variant == "skip_silence" else None)
                per_cutoff = {}
                for label, cutoff in cutoffs_for(model):
                    hits = events(r.series, cutoff)
                    blocks = info.get("noise_blocks")
                    where = (
                        [blocks[min(int(np.searchsorted(edges, t, "right")) - 1, len(blocks) - 1)] for t in hits]
                        if blocks
                        else []
                    )
                    per_cutoff[label] = {
                        "cutoff": cutoff,
                        "false_accepts": len(hits),
                        "at_s": [round(t, 1) for t in hits],
                        "in": where,
                    }
                res[variant] = {
                    "cutoffs": per_cutoff,
                    "cpu_percent_of_core": round(100 * r.cpu_s / (len(audio) / RATE), 3),
                }
            out["models"][model][source] = res
            own = res["all_frames"]["cutoffs"]["model"]
            print(
                f"FA {model} {source} ({hours * 60:.0f} min): "
                + ", ".join(f"{v['false_accepts']} at {k}" for k, v in res["all_frames"]["cutoffs"].items())
                + (
                    f"; resting on silence: {res['skip_silence']['cutoffs']['model']['false_accepts']} at model"
                    if skip
                    else ""
                )
                + f"; CPU {res['all_frames']['cpu_percent_of_core']} % (own cutoff {own['cutoff']})",
                flush=True,
            )
    return out
