"""Wake-word benchmark (issues 15, 24): real voices, false accepts per hour, detector CPU.

1. Acceptance on real voices (by default; ``--recordings``, default ../shared/data/wake beside the
   checkout when present): people saying each phrase (DIR/<model>/*.wav, one phrase per file),
   each mixed whole (its own audio around its words) with pink, babble, HVAC and real music noise
   at 20, 10, 5 and 0 dB SNR (its words' frames vs noise), the words after 2-2.8 s of the noise.
   Accepted = a detection between the words' start and 1.5 s after their end. Measured with the detector hearing every
   frame and resting on what the daemon's front-end calls silence (wake.skip_silence, the default).
2. False accepts (``--fa-minutes`` of each source, ``--fa-sources``): "speech", real recorded
   speech with pauses (pocketsphinx-testdata, every Asterisk English prompt, looped with other
   speeds 0.92-1.08, levels -34..-20 dBFS and pauses 0.2-2.5 s) under continuous pink, babble,
   HVAC and music noise at 20/10/5 dB in turn; "tv", dialogue with hardly a pause (English and
   the Asterisk French, Spanish and Italian voices) over a music bed at 15/10/5/0 dB below it;
   "music", the Asterisk music-on-hold tracks alone, each pass at another speed and level. Prompts
   whose text holds a word of a wake phrase are left out. Every detection is a false accept.
3. Cutoffs: every model is tried at its manifest's cutoff ("model") and at SWEEP; the cutoff
   chosen per model (config/wake.py SHIPPED_CUTOFFS) is the one with the best acceptance at 10 dB
   among those with at most TARGET_FA_PER_HOUR false accepts per hour over all sources.
4. CPU: the detector over the false-accept audio (% of one core), and a closed gate in an idle
   room with and without resting on silence (``--idle-minutes``).
5. ``--synthetic``: the earlier synthetic acceptance set (espeak-ng and flite voices, 3 rates, 2
   pitches, 3 rooms, 4 noises at 10 dB: 936 clips per phrase), for comparison.

One run per model and audio gives the averaged probability for every frame; every cutoff is tried
on it (with the 2 s refractory period, as WakeDetector does), so the sweep is exact.

    .venv/bin/python -m scripts.bench.wake --write scripts/bench/results/wake_benchmark_real.json   # make bench-wake
    .venv/bin/python -m scripts.bench.wake --fa-minutes 5 --models alexa             # quick
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

from scripts import REPO, command_line
from scripts.bench import audio_corpus as ac
from scripts.bench import speech_corpus as sc
from voxnode.wake.detector import WakeDetector
from voxnode.wake.models import load_wake_model
from voxnode.wake.silence import SilenceSkip

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
ACCEPT_SNRS = [20, 10, 5, 0]  # the real recordings
LATE_S = 1.5  # a detection up to this long after the phrase ends counts as accepting it
REFRACTORY_MS = 2000  # wake.refractory_ms default
TARGET_FA_PER_HOUR = 0.5  # issue 24
# Cutoffs tried beside each model's own. Not 0.93 / 0.92 (tried at stop 35): over this bench's 3 hours alexa
# at 0.93 has the same 1 false accept as 0.95 (the next, "left brace", scores 0.929), so choose_cutoffs
# would pick it for 94.4 vs 94.1 % at 10 dB; over 7 hours (wake_rules_7h.json) it has 6 (0.86 per hour,
# target 0.5) where 0.95 has 3 (0.43): a step that fine fits the 3 hours, not the target.
SWEEP = [0.98, 0.97, 0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.6, 0.5, 0.4]


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


def detect(model: str, audio: np.ndarray, xnnpack: bool = True, flags: np.ndarray | None = None) -> Run:
    """The averaged probability after every frame, from a detector that never fires (cutoff above
    any probability), so that every cutoff can be tried on one run (`events`). `flags`: the
    front-end's speech verdict per frame; the detector then rests on silence as the daemon's closed
    gate has it do (wake.skip_silence; a frame it does not hear scores 0)."""
    d = WakeDetector(load_wake_model(model, threshold=0.9999), 0, xnnpack=xnnpack)
    pcm = np.clip(np.round(audio), -32768, 32767).astype(np.int16)
    n = (len(pcm) - 320) // 320 + 1
    series = np.zeros(max(0, n), dtype=np.float32)
    skip = SilenceSkip() if flags is not None else None
    t0 = time.process_time()
    for k in range(n):
        frame = pcm[k * 320 : (k + 1) * 320]
        if skip is None:
            d.process(frame)
        else:
            heard = skip.frames(frame, bool(flags[k]))  # type: ignore[index]
            if not heard:
                continue
            for f in heard:
                d.process(f)
        series[k] = d.last_probability
    return Run(series, time.process_time() - t0)


def speech_flags(audio: np.ndarray) -> np.ndarray:
    """The daemon's front-end verdict (default config: high-pass, Silero VAD, noise gate) per frame."""
    from voxnode.config import Config
    from voxnode.frontend.chain import FrontEnd
    from voxnode.stream.params import frontend_params

    fe = FrontEnd(frontend_params(Config()))
    pcm = np.clip(np.round(audio), -32768, 32767).astype(np.int16)
    n = (len(pcm) - 320) // 320 + 1
    return np.array([fe.process(pcm[k * 320 : (k + 1) * 320]).speech for k in range(max(0, n))], dtype=bool)


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


def manifest_cutoff(model: str) -> float:
    """The cutoff the model's author tuned (its manifest), not voxnode's SHIPPED_CUTOFFS."""
    return load_wake_model(model).manifest_cutoff


def cutoffs_for(model: str) -> list[tuple[str, float]]:
    own = manifest_cutoff(model)
    return [("model", own)] + [(f"{c:g}", c) for c in SWEEP if abs(c - own) > 1e-6]


# ---- 1. false accepts -------------------------------------------------------------------------


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


# ---- 2. acceptance ----------------------------------------------------------------------------


def placed(x: np.ndarray, lead: float, tail: float, context: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """The words `x` after `lead` s and before `tail` s of silence, or, given `context`, of the
    recording's own audio (before, after) its words right against them, as much as those hold
    (recording_in_noise; bench/aec.py's wake over music)."""
    clean = np.concatenate([ac.silence(lead), x, ac.silence(tail)])
    if context is not None:
        at, after_at = int(lead * RATE), int(lead * RATE) + len(x)
        before = context[0][-at:] if at else context[0][:0]
        after = context[1][: len(clean) - after_at]
        clean[at - len(before) : at] = before
        clean[after_at : after_at + len(after)] = after
    return clean


def noisy_clip(
    x: np.ndarray,
    phrase_len: int,
    kind: str,
    snr: float,
    clip_id: int,
    music,
    lead_s: float = 0.6,
    context: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, float, float]:
    """The phrase `x` (its first `phrase_len` samples are the words) after `lead_s` + 0-0.8 s of
    the noise alone, mixed with `kind` noise at `snr` dB over the phrase -> (clip, start s, end s).
    `context`: the recording's own audio (before, after) its words, laid under the noise right
    before and after them (as much as the clip holds: at most the lead, and LATE_S + 0.2 s after);
    the clip's length, noise and SNR (over the words) are the same as without it."""
    lead = lead_s + 0.4 * (clip_id % 3)
    clean = placed(x, lead, LATE_S + 0.2, context)
    labels = np.zeros(len(clean) // 320, dtype=bool)
    a, b = int(lead * RATE) // 320, int((lead * RATE + phrase_len) // 320)
    labels[a:b] = True  # SNR over the phrase: its frames are the speech
    noisy = ac.mix(clean, noise_for(kind, len(clean), clip_id, music), snr, labels)
    return noisy, lead, lead + phrase_len / RATE


def accepted(series: np.ndarray, start: float, end: float, cuts) -> dict[str, bool]:
    """Per cutoff label: whether the detector fired between the phrase's start and LATE_S after its end."""
    return {label: any(start <= t <= end + LATE_S for t in events(series, cutoff)) for label, cutoff in cuts}


def accepted_in_noise(
    model: str, xnn: bool, x: np.ndarray, phrase_len: int, kind: str, clip_id: int, cuts, music
) -> dict[str, bool]:
    """Whether the detector fires on the phrase `x` mixed with `kind` noise at ACCEPT_SNR, per cutoff label."""
    noisy, start, end = noisy_clip(x, phrase_len, kind, ACCEPT_SNR, clip_id, music)
    return accepted(detect(model, noisy, xnn).series, start, end, cuts)


@dataclass(frozen=True)
class Recording:
    audio: np.ndarray  # the whole file at -26 dBFS
    start: int  # its words, samples [start, end): the frames within 35 dB of its loudest (label_speech)
    end: int

    @property
    def words(self) -> np.ndarray:
        return self.audio[self.start : self.end]

    @property
    def context(self) -> tuple[np.ndarray, np.ndarray]:
        """The recording's own audio before and after its words."""
        return self.audio[: self.start], self.audio[self.end :]


def recordings(folder: Path, model: str) -> list[Recording]:
    """FOLDER/<model>/*.wav at -26 dBFS, each with where its words are (without the file's silence)."""
    from voxnode.audio.wavfile import read_audio

    out = []
    for wav in sorted((folder / model).glob("*.wav")):
        x = ac.at_dbfs(read_audio(wav) * 32768.0, -26).astype(np.float32)
        speech = np.flatnonzero(ac.label_speech(x))
        if len(speech):
            out.append(Recording(x, int(speech[0]) * 320, (int(speech[-1]) + 1) * 320))
    return out


def recorded_phrases(folder: Path, model: str) -> list[np.ndarray]:
    """FOLDER/<model>/*.wav at -26 dBFS, each cut to its words (without the file's silence)."""
    return [r.words for r in recordings(folder, model)]


def recording_in_noise(rec: Recording, kind: str, snr: float, clip_id: int, music) -> tuple[np.ndarray, float, float]:
    """A recording's words in `kind` noise at `snr` dB over them, after 2-2.8 s of the noise, with
    the recording's own audio around them, as a detector in the room hears it (noisy_clip).

    Not the words alone (before stop 36): label_speech drops every frame more than 35 dB under
    the file's loudest, which in some recordings is speech, e.g. 198.wav's 240 ms of breathy
    onset rising from -58 to -38 dB (zero-crossing rate 0.3-0.5) into the "a", or 18.wav's 200 ms
    decay of the last "a" (-35 to -50 dB). It hardly moves the figure (scripts/bench/wake_trim.py,
    alexa, the same noise): the whole file against the words alone +4, -1, -1, -2 of 660 trials
    at 10 dB over 4 draws of the noise, -2..+1 at 5 dB; another draw moves 10 dB by up to 9
    trials (docs/benchmarks.md, fourth pass). Kept because it is what the room hears."""
    return noisy_clip(rec.words, len(rec.words), kind, snr, clip_id, music, lead_s=2.0, context=rec.context)


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
            for snr in ACCEPT_SNRS:
                for kind in ACCEPT_NOISES:
                    clip_id = 1000 + 4 * i + ACCEPT_NOISES.index(kind)
                    clip, start, end = recording_in_noise(x, kind, snr, clip_id, music)
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


def idle_cpu(minutes: float) -> dict:
    """CPU of a closed gate in an idle room (no one speaking: -55 dBFS pink noise, a room at rest):
    the daemon's front-end and the wake gate (its detector), per stream, with the detector hearing
    every frame and resting on silence (wake.skip_silence), for one word and for three at once."""
    from voxnode.config import Config
    from voxnode.frontend.chain import FrontEnd
    from voxnode.stream.params import frontend_params
    from voxnode.stream.wake_gate import WakeGate, WakeParams

    n = int(minutes * 60 * RATE) // 320
    room = np.clip(np.round(ac.at_dbfs(ac.noise("pink", n * 320, seed=11), -55)), -32768, 32767).astype(np.int16)
    out = {"room": "pink noise at -55 dBFS", "minutes": minutes}
    for words in (["okay_nabu"], ["okay_nabu", "hey_jarvis", "alexa"]):
        for skip in (False, True):
            fe = FrontEnd(frontend_params(Config()))
            models = tuple(load_wake_model(m) for m in words)
            gate = WakeGate(WakeParams(models, listen_timeout_frames=250, refractory_ms=2000, skip_silence=skip))
            fe_s = gate_s = 0.0
            for k in range(n):
                frame = room[k * 320 : (k + 1) * 320]
                t0 = time.process_time()
                speech = fe.process(frame).speech
                t1 = time.process_time()
                gate.hear(frame, 0, speech)
                gate_s += time.process_time() - t1
                fe_s += t1 - t0
            key = f"{'+'.join(words)} {'skip_silence' if skip else 'all_frames'}"
            out[key] = {
                "gate_cpu_percent": round(100 * gate_s / (n * 0.02), 3),
                "frontend_cpu_percent": round(100 * fe_s / (n * 0.02), 3),
                "frames_skipped_percent": round(100 * gate.skipped / n, 1),
            }
            print(f"idle CPU {key}: {out[key]}", flush=True)
    return out


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


def choose_cutoffs(fa: dict, accepted: dict) -> dict:
    """Per model: the cutoff with the best acceptance at 10 dB (real voices, resting on silence
    where measured) among those with at most TARGET_FA_PER_HOUR false accepts per hour over every
    false-accept source (the highest cutoff when none has so few)."""
    out = {}
    for model, sources in fa["models"].items():
        hours = sum(r["hours"] for r in sources.values())
        rows = []
        for label, cutoff in cutoffs_for(model):
            n = sum(r["all_frames"]["cutoffs"][label]["false_accepts"] for r in sources.values())
            acc = accepted.get(model, {}).get("cutoffs", {}).get(label, {})
            by_snr = (acc.get("skip_silence") or acc.get("all_frames") or {}).get("percent_by_snr", {})
            rows.append((label, cutoff, n, n / hours if hours else 0.0, by_snr.get("10"), by_snr.get("5")))
        ok = [r for r in rows if r[3] <= TARGET_FA_PER_HOUR]
        # Best at 10 dB, then at 5 dB; on a tie the manifest's own cutoff, then the higher one.
        best = (
            max(ok, key=lambda r: (r[4] or 0.0, r[5] or 0.0, r[0] == "model", r[1]))
            if ok
            else max(rows, key=lambda r: r[1])
        )
        out[model] = {
            "cutoff": best[1],
            "false_accepts": best[2],
            "hours": round(hours, 2),
            "per_hour": round(best[3], 2),
            "accepted_10db": best[4],
            "accepted_5db": best[5],
            "met_fa_target": bool(ok),
        }
        print(f"cutoff {model}: {out[model]}", flush=True)
    return out


def default_recordings() -> Path | None:
    """../shared/data/wake beside the checkout, or /work/shared's from a worktree (as bench/aec.py)."""
    return next(
        (
            p / "data" / "wake"
            for p in (REPO.parent / "shared", REPO.parents[1] / "shared")
            if (p / "data" / "wake").is_dir()
        ),
        None,
    )


def acceptance_only(models: list[str], args: argparse.Namespace) -> int:
    """--acceptance-only: the real recordings' acceptance measured again into an existing results file,
    whose false accepts (other audio: they do not depend on the recordings) choose the cutoffs again."""
    if args.recordings is None or not args.write or not Path(args.write).is_file():
        raise SystemExit("--acceptance-only needs --recordings and an existing --write JSON with the false accepts")
    out = json.loads(Path(args.write).read_text())
    t0 = time.time()
    out["acceptance_recorded"] = acceptance_recorded(models, args.recordings, skip=not args.no_skip)
    out["acceptance_recorded_run"] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "command": command_line(),
        "wall_s": round(time.time() - t0, 1),
    }
    out["cutoffs"] = choose_cutoffs(out["false_accepts"], out["acceptance_recorded"])
    Path(args.write).write_text(json.dumps(out, indent=1) + "\n")
    print(f"written to {args.write}")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default=",".join(PHRASES), help="comma-separated shipped model names")
    p.add_argument("--fa-minutes", type=float, default=60.0, help="minutes of each false-accept source")
    p.add_argument("--fa-sources", default=",".join(FA_SOURCES), help="comma-separated: speech, tv, music")
    p.add_argument("--idle-minutes", type=float, default=2.0)
    p.add_argument("--synthetic", action="store_true", help="also the synthetic acceptance set (slow)")
    p.add_argument("--no-skip", action="store_true", help="only with the detector hearing every frame")
    p.add_argument("--write", metavar="JSON", help="save the results here")
    p.add_argument(
        "--acceptance-only",
        action="store_true",
        help="only the real recordings' acceptance, into the --write JSON (false accepts kept, cutoffs chosen again)",
    )
    p.add_argument(
        "--recordings",
        metavar="DIR",
        type=Path,
        default=default_recordings(),
        help="recordings of people saying the phrases: DIR/<model>/*.wav (default: ../shared/data/wake)",
    )
    args = p.parse_args()
    models = [m for m in args.models.split(",") if m]
    t0 = time.time()
    out: dict = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "command": command_line(),
    }
    if args.acceptance_only:
        return acceptance_only(models, args)
    if args.recordings is not None:
        out["acceptance_recorded"] = acceptance_recorded(models, args.recordings, skip=not args.no_skip)
    else:
        print("no recordings of people (../shared/data/wake, --recordings): acceptance on real voices skipped")
    sources = [x for x in args.fa_sources.split(",") if x]
    out["false_accepts"] = false_accepts(models, args.fa_minutes, sources, skip=not args.no_skip)
    out["cutoffs"] = choose_cutoffs(out["false_accepts"], out.get("acceptance_recorded", {}))
    if args.idle_minutes > 0:
        out["idle_cpu"] = idle_cpu(args.idle_minutes)
    if args.synthetic:
        out["acceptance_synthetic"] = acceptance(models)
    out["wall_s"] = round(time.time() - t0, 1)
    if args.write:
        Path(args.write).write_text(json.dumps(out, indent=1) + "\n")
        print(f"written to {args.write}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
