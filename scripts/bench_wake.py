#!/usr/bin/env python3
"""Wake-word benchmark (issue 15): false accepts per hour, acceptance at 10 dB SNR, detector CPU.

1. False accepts: an hour (``--fa-minutes``) of real recorded speech without any wake word
   (scripts/speech_corpus.py: the pocketsphinx-testdata LibriVox sentences and card names, and
   every Asterisk prompt, looped with variety: each pass at another speed (0.92-1.08, resampled),
   level (-34..-20 dBFS) and pause (0.2-2.5 s)), with continuous noise running throughout, as in
   the live-noise benchmark: pink, babble, HVAC and real recorded music (Asterisk music on hold)
   in turn, each at 20, 10 and 5 dB below the speech. Prompts whose text holds a word of a wake
   phrase are left out. The detector runs on it 20 ms at a time, as on a microphone, faster than
   real time (it counts frames, not seconds); every detection is a false accept.
2. Acceptance: a synthetic test set (no recordings of these words ship in Debian): each wake
   phrase spoken by espeak-ng (8 voices) and flite (5 voices), at 3 rates and 2 pitches, placed in
   3 rooms (dry; "near": synthetic impulse response, RT60 0.3 s, direct-to-reverberant +6 dB;
   "far": RT60 0.6 s, DRR -3 dB) and mixed with pink, babble, HVAC or real music at 10 dB SNR
   (phrase frames vs noise): 936 clips per phrase. A clip is accepted when the detector fires
   between the phrase's start and 1.5 s after its end.
3. CPU: process time of the detector over the false-accept audio / its duration (% of one core).

Each of the four shipped models runs with XNNPACK (as shipped) and okay_nabu also with LiteRT's
reference kernels (bit-identical to pymicro-wakeword's own TFLite library).

    .venv/bin/python scripts/bench_wake.py --write docs/wake_benchmark.json
    .venv/bin/python scripts/bench_wake.py --fa-minutes 5 --models okay_nabu   # quick
    .venv/bin/python scripts/bench_wake.py --fa-minutes 1 --no-accept --recordings DIR  # recorded phrases
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import audio_corpus as ac  # noqa: E402
import speech_corpus as sc  # noqa: E402

from voxnode.wake.detector import WakeDetector  # noqa: E402
from voxnode.wake.models import load_wake_model  # noqa: E402

RATE = 16000
PHRASES = {"okay_nabu": "okay nabu", "hey_jarvis": "hey jarvis", "hey_mycroft": "hey mycroft", "alexa": "alexa"}
WAKE_WORDS = {"nabu", "jarvis", "mycroft", "alexa"}
# (synthesiser, voice): espeak-ng's formant voices and variants, and flite's CMU voices (diphone
# kal/kal16, clustergen awb/rms/slt), which sound more like a person; both are Debian packages.
VOICES = [
    ("espeak", v) for v in ("en-us", "en-gb", "en-us+f3", "en-gb+m3", "en-us+m7", "en-gb-x-rp+f2", "en-us+f2", "en-029")
]
VOICES += [("flite", v) for v in ("slt", "rms", "awb", "kal16", "kal")]
RATES = ["slow", "normal", "fast"]
ESPEAK_RATE = {"slow": 130, "normal": 160, "fast": 190}  # words per minute
FLITE_STRETCH = {"slow": 1.2, "normal": 1.0, "fast": 0.85}  # duration_stretch
PITCHES = ["low", "high"]
ESPEAK_PITCH = {"low": 35, "high": 65}  # espeak-ng -p (0-99, default 50)
FLITE_CENTS = {"low": -200, "high": 200}  # sox pitch shift for flite, which has no per-call pitch option
ROOMS = {"dry": None, "near": (0.3, 6.0), "far": (0.6, -3.0)}  # (RT60 s, direct-to-reverberant dB)
ACCEPT_NOISES = ["pink", "babble", "hvac", "music"]
FA_NOISES = ["pink", "babble", "hvac", "music"]
FA_SNRS = [20, 10, 5]
ACCEPT_SNR = 10.0
LATE_S = 1.5  # a detection up to this long after the phrase ends counts as accepting it
REFRACTORY_MS = 2000  # wake.refractory_ms default
SWEEP = [0.8, 0.7, 0.6, 0.5, 0.4]  # cutoffs tried below each model's own


# ---- audio ------------------------------------------------------------------------------------


def speak(text: str, engine: str, voice: str, rate: str, pitch: str) -> np.ndarray:
    key = f"wake-{engine}-{voice}-{rate}-{pitch}-{text}".replace(" ", "_").replace("+", "p")
    path = ac.cache_dir() / f"{key}.raw"
    if not path.exists():
        to_raw = ["-r", str(RATE), "-c", "1", "-b", "16", "-e", "signed-integer", "-t", "raw", "-"]
        if engine == "espeak":
            cmd = ["espeak-ng", "-v", voice, "-s", str(ESPEAK_RATE[rate]), "-p", str(ESPEAK_PITCH[pitch]), "--stdout"]
            wav = subprocess.run([*cmd, text], check=True, capture_output=True).stdout
            raw = subprocess.run(["sox", "-t", "wav", "-", *to_raw], input=wav, check=True, capture_output=True).stdout
        else:
            tmp = path.with_suffix(".wav")
            stretch = f"duration_stretch={FLITE_STRETCH[rate]}"
            subprocess.run(["flite", "-voice", voice, "--setf", stretch, "-t", text, "-o", str(tmp)], check=True)
            shift = ["pitch", str(FLITE_CENTS[pitch])]
            raw = subprocess.run(["sox", str(tmp), *to_raw, *shift], check=True, capture_output=True).stdout
            tmp.unlink()
        path.write_bytes(raw)
    return np.frombuffer(path.read_bytes(), dtype="<i2").astype(np.float32)


def impulse_response(rt60: float, drr_db: float, rng: np.random.Generator) -> np.ndarray:
    """A synthetic room: the direct path, then exponentially decaying noise (the diffuse tail)
    from 5 ms on, scaled so that direct / tail energy = drr_db."""
    n = int(rt60 * RATE)
    t = np.arange(n) / RATE
    tail = rng.standard_normal(n) * np.exp(-6.908 * t / rt60)
    tail[: int(0.005 * RATE)] = 0
    tail *= np.sqrt(1.0 / (np.sum(tail**2) * 10 ** (drr_db / 10)))
    tail[0] = 1.0
    return tail.astype(np.float32)


def noise_for(kind: str, n: int, seed: int, music: list[np.ndarray]) -> np.ndarray:
    if kind == "music":
        track = music[seed % len(music)]
        off = (seed * 7919 * RATE) % max(1, len(track) - n)
        reps = int(np.ceil((off + n) / len(track)))
        return np.tile(track, reps)[off : off + n].astype(np.float32)
    return ac.noise(kind, n, seed=seed)


def add_noise(clean: np.ndarray, kind: str, snr_db: float, seed: int, music: list[np.ndarray]) -> np.ndarray:
    return ac.mix(clean, noise_for(kind, len(clean), seed, music), snr_db)


# ---- detection --------------------------------------------------------------------------------


@dataclass
class Run:
    series: np.ndarray  # per 20 ms frame: the detector's averaged probability after that frame
    cpu_s: float


def detect(model: str, audio: np.ndarray, xnnpack: bool = True) -> Run:
    """The averaged probability after every frame, from a detector that never fires (cutoff above
    any probability), so that every cutoff can be tried on one run (`events`)."""
    d = WakeDetector(load_wake_model(model, threshold=0.9999), 0, xnnpack=xnnpack)
    pcm = np.clip(np.round(audio), -32768, 32767).astype(np.int16)
    n = (len(pcm) - 320) // 320 + 1
    series = np.zeros(max(0, n), dtype=np.float32)
    t0 = time.process_time()
    for k in range(n):
        d.process(pcm[k * 320 : (k + 1) * 320])
        series[k] = d.last_probability
    return Run(series, time.process_time() - t0)


def events(series: np.ndarray, cutoff: float, refractory_ms: int = REFRACTORY_MS) -> list[float]:
    """Where the detector with this cutoff fires (seconds): the averaged probability above the cutoff,
    then nothing for the refractory period (as WakeDetector does)."""
    gap = refractory_ms // 20
    out, allowed = [], 0
    for i in np.flatnonzero(series > cutoff):
        if i >= allowed:
            out.append(float(i + 1) * 0.02)
            allowed = i + gap
    return out


def cutoffs_for(model: str) -> list[tuple[str, float]]:
    own = load_wake_model(model).cutoff
    return [("model", own)] + [(f"{c:g}", c) for c in SWEEP if c < own]


# ---- 1. false accepts -------------------------------------------------------------------------


def fa_audio(minutes: float, seed: int = 0) -> tuple[np.ndarray, dict]:
    utts = [u for u in sc.pocketsphinx() + list(sc.asterisk(0.5, 30.0)) if not WAKE_WORDS & set(u.text.lower().split())]
    if not utts:
        raise SystemExit("no speech corpus: make deps-corpus (pocketsphinx-testdata, asterisk-core-sounds-en*)")
    music = [a for _, a in sc.music_tracks()]
    rng = np.random.default_rng(seed)
    target = int(minutes * 60 * RATE)
    parts: list[np.ndarray] = []
    total, passes, speech_s = 0, 0, 0.0
    import soxr

    while total < target:
        speed = float(rng.uniform(0.92, 1.08))
        for i in rng.permutation(len(utts)):
            x = utts[i].audio
            x = soxr.resample(x, RATE, RATE / speed).astype(np.float32) if abs(speed - 1) > 1e-3 else x
            x = ac.at_dbfs(x, float(rng.uniform(-34, -20)))
            gap = ac.silence(float(rng.uniform(0.2, 2.5)))
            parts += [x, gap]
            speech_s += len(x) / RATE
            total += len(x) + len(gap)
            if total >= target:
                break
        passes += 1
    clean = np.concatenate(parts)[:target]
    # Continuous noise: the recording split into equal blocks, one noise kind and SNR per block.
    blocks = [(k, s) for s in FA_SNRS for k in FA_NOISES]
    edges = np.linspace(0, len(clean), len(blocks) + 1).astype(int)
    labels = ac.label_speech(clean)
    frames = clean[: len(labels) * 320].reshape(len(labels), 320)
    p_speech = float(np.mean(frames[labels].astype(np.float64) ** 2))
    out = clean.copy()
    for b, (kind, snr) in enumerate(blocks):
        lo, hi = edges[b], edges[b + 1]
        nz = noise_for(kind, hi - lo, 100 + b, music).astype(np.float64)
        scale = np.sqrt(p_speech / ((np.mean(nz**2) + 1e-12) * 10 ** (snr / 10)))
        out[lo:hi] += (scale * nz).astype(np.float32)
    out = np.clip(out, -32768, 32767).astype(np.float32)
    info = {
        "minutes": round(len(out) / RATE / 60, 1),
        "speech_minutes": round(min(speech_s, len(out) / RATE) / 60, 1),
        "distinct_utterances": len(utts),
        "distinct_speech_minutes": round(sum(u.duration_s for u in utts) / 60, 1),
        "passes": passes,
        "noise_blocks": [f"{k} {s} dB" for k, s in blocks],
    }
    return out, info


def false_accepts(models: list[str], minutes: float) -> dict:
    audio, info = fa_audio(minutes)
    hours = len(audio) / RATE / 3600
    results = {}
    configs = [(m, True) for m in models] + ([("okay_nabu", False)] if "okay_nabu" in models else [])
    edges = np.linspace(0, len(audio) / RATE, len(info["noise_blocks"]) + 1)
    for model, xnn in configs:
        r = detect(model, audio, xnn)
        key = f"{model}{'' if xnn else ' (reference kernels)'}"
        per_cutoff = {}
        for label, cutoff in cutoffs_for(model):
            hits = events(r.series, cutoff)
            where = [
                info["noise_blocks"][min(int(np.searchsorted(edges, t, "right")) - 1, len(edges) - 2)] for t in hits
            ]
            per_cutoff[label] = {
                "cutoff": cutoff,
                "false_accepts": len(hits),
                "per_hour": round(len(hits) / hours, 2),
                "at_s": [round(t, 1) for t in hits],
                "in": where,
            }
        results[key] = {
            "cutoffs": per_cutoff,
            "cpu_percent_of_core": round(100 * r.cpu_s / (len(audio) / RATE), 2),
            "us_per_20ms_frame": round(r.cpu_s / (len(audio) / 320) * 1e6, 1),
        }
        own = per_cutoff["model"]
        print(
            f"FA {key}: {own['false_accepts']} in {hours * 60:.0f} min ({own['per_hour']}/h) at its cutoff "
            f"{own['cutoff']}; "
            + ", ".join(f"{v['per_hour']}/h at {k}" for k, v in per_cutoff.items() if k != "model")
            + f"; CPU {results[key]['cpu_percent_of_core']} % of a core",
            flush=True,
        )
    return {"audio": info, "models": results}


# ---- 2. acceptance ----------------------------------------------------------------------------


def accepted_in_noise(
    model: str, xnn: bool, x: np.ndarray, phrase_len: int, kind: str, clip_id: int, cuts, music
) -> dict[str, bool]:
    """Whether the detector fires on the phrase `x` (its first `phrase_len` samples are the words)
    mixed with `kind` noise at ACCEPT_SNR over the phrase, per cutoff label."""
    lead = 0.6 + 0.4 * (clip_id % 3)
    clean = np.concatenate([ac.silence(lead), x, ac.silence(LATE_S + 0.2)])
    labels = np.zeros(len(clean) // 320, dtype=bool)
    a, b = int(lead * RATE) // 320, int((lead * RATE + phrase_len) // 320)
    labels[a:b] = True  # SNR over the phrase: its frames are the speech
    noisy = ac.mix(clean, noise_for(kind, len(clean), clip_id, music), ACCEPT_SNR, labels)
    r = detect(model, noisy, xnn)
    t_end = lead + phrase_len / RATE
    return {label: any(lead <= t <= t_end + LATE_S for t in events(r.series, cutoff)) for label, cutoff in cuts}


def acceptance_recorded(models: list[str], folder: Path) -> dict:
    """Acceptance on recordings of people saying the phrases: FOLDER/<model>/*.wav (any WAV; one
    phrase per file, as recorded in a room), each mixed with every ACCEPT_NOISES kind at 10 dB."""
    from voxnode.audio.wavfile import read_audio

    music = [a for _, a in sc.music_tracks()]
    results = {}
    for model in models:
        wavs = sorted((folder / model).glob("*.wav"))
        if not wavs:
            print(f"accept {model} (recorded): no WAV files in {folder / model}", flush=True)
            continue
        cuts = cutoffs_for(model)
        ok_at = {label: 0 for label, _ in cuts}
        n = 0
        for i, wav in enumerate(wavs):
            x = ac.at_dbfs(read_audio(wav) * 32768.0, -26).astype(np.float32)
            speech = np.flatnonzero(ac.label_speech(x))
            if not len(speech):
                continue
            x = x[int(speech[0]) * 320 : (int(speech[-1]) + 1) * 320]  # the words, without the file's silence
            for kind in ACCEPT_NOISES:
                n += 1
                oks = accepted_in_noise(
                    model, True, x, len(x), kind, 1000 + 4 * i + ACCEPT_NOISES.index(kind), cuts, music
                )
                for label, _ in cuts:
                    ok_at[label] += oks[label]
        if n:
            results[model] = {
                "recordings": len(wavs),
                "clips": n,
                "cutoffs": {
                    label: {"cutoff": c, "accepted": ok_at[label], "percent": round(100 * ok_at[label] / n, 1)}
                    for label, c in cuts
                },
            }
            print(
                f"accept {model} (recorded): "
                + ", ".join(f"{v['percent']} % at {k} ({v['cutoff']})" for k, v in results[model]["cutoffs"].items()),
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


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default=",".join(PHRASES), help="comma-separated shipped model names")
    p.add_argument("--fa-minutes", type=float, default=60.0)
    p.add_argument("--no-accept", action="store_true")
    p.add_argument("--write", metavar="JSON", help="save the results here")
    p.add_argument(
        "--recordings",
        metavar="DIR",
        type=Path,
        help="also measure acceptance on recordings of people saying the phrases: DIR/<model>/*.wav",
    )
    args = p.parse_args()
    models = [m for m in args.models.split(",") if m]
    t0 = time.time()
    out = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "command": " ".join(sys.argv),
        "false_accepts": false_accepts(models, args.fa_minutes),
    }
    if not args.no_accept:
        out["acceptance"] = acceptance(models)
    if args.recordings is not None:
        out["acceptance_recorded"] = acceptance_recorded(models, args.recordings)
    out["wall_s"] = round(time.time() - t0, 1)
    if args.write:
        Path(args.write).write_text(json.dumps(out, indent=1) + "\n")
        print(f"written to {args.write}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
