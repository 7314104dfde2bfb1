"""Real test audio for the streaming pipeline: speech clips, labels, noises, mixing.

Speech: espeak-ng sentences (several voices) and the human recordings shipped
by Debian's pocketsphinx-testdata.  Noise: synthetic white, pink, HVAC rumble
with 50/100 Hz hum, babble (overlapping espeak voices) and music-like tones.
Everything is 16 kHz mono int16-scale float32 unless noted.
Used by tests/stream, scripts/bench/eval_vad.py, scripts/bench/eval_denoise.py and
scripts/bench/stream.py.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np

RATE = 16000
FRAME = 320
PS_DATA = Path("/usr/share/pocketsphinx/test/data")

SENTENCES = [
    "turn on the kitchen lights",
    "what is the weather like tomorrow morning",
    "set a timer for ten minutes",
    "please open the garage door",
    "play some music in the living room",
    "how far is it to the nearest train station",
    "remind me to call my sister at six",
    "the quick brown fox jumps over the lazy dog",
    "switch off the heating in the bedroom",
    "add milk and eggs to the shopping list",
    "what time does the bakery close today",
    "lower the volume of the television",
]
VOICES = ["en-us", "en-gb", "en-us+f3", "en-gb+m3", "en-us+m7", "en-gb-x-rp+f2"]
# Babble uses other sentences than the test set so it cannot "help" recognition.
BABBLE_TEXT = [
    "many people were talking at the same time in the crowded hall",
    "the meeting will continue after a short break for coffee",
    "she said that the report would be ready by friday afternoon",
    "we should take the bus because the car is in the garage",
    "nobody knew exactly when the concert was supposed to begin",
    "the children played outside until it started to rain",
]


@dataclass(frozen=True)
class Clip:
    name: str
    text: str
    audio: np.ndarray  # float32, int16 scale


def cache_dir() -> Path:
    d = Path(os.environ.get("VOXNODE_TEST_CACHE", Path(tempfile.gettempdir()) / "voxnode-audio-cache"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def have_espeak() -> bool:
    return shutil.which("espeak-ng") is not None and shutil.which("sox") is not None


def tts(text: str, voice: str = "en-us", speed: int = 160) -> np.ndarray:
    """espeak-ng -> sox -> 16 kHz mono int16; cached on disk by content."""
    key = hashlib.sha1(f"{voice}|{speed}|{text}".encode()).hexdigest()[:16]
    path = cache_dir() / f"tts-{key}.raw"
    if not path.exists():
        wav = subprocess.run(
            ["espeak-ng", "-v", voice, "-s", str(speed), "--stdout", text], check=True, capture_output=True
        ).stdout
        raw = subprocess.run(
            ["sox", "-t", "wav", "-", "-r", str(RATE), "-c", "1", "-b", "16", "-e", "signed-integer", "-t", "raw", "-"],
            input=wav,
            check=True,
            capture_output=True,
        ).stdout
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(raw)
        tmp.replace(path)
    return np.frombuffer(path.read_bytes(), dtype="<i2").astype(np.float32)


def espeak_clips(n: int | None = None) -> list[Clip]:
    out = []
    for i, text in enumerate(SENTENCES[:n]):
        out.append(Clip(f"tts{i}", text, tts(text, VOICES[i % len(VOICES)])))
    return out


def _read_wav(path: Path) -> np.ndarray:
    with wave.open(str(path)) as w:
        assert w.getframerate() == RATE and w.getnchannels() == 1 and w.getsampwidth() == 2
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32)


def recorded_clips() -> list[Clip]:
    """Human speech from pocketsphinx-testdata (LibriVox reader + card names)."""
    clips = []
    for sub, tfile in (("librivox", "transcription"), ("cards", "cards.transcription")):
        tpath = PS_DATA / sub / tfile
        if not tpath.exists():
            continue
        for line in tpath.read_text().splitlines():
            m = re.match(r"<s>(.*)</s>\s*\((\S+)\)", line.strip())
            if m:
                text, fid = m.group(1).strip(), m.group(2)
                clips.append(Clip(f"{sub}-{fid}", text, _read_wav(PS_DATA / sub / f"{fid}.wav")))
    return clips


# ---- labels -------------------------------------------------------------------------


def frame_levels_db(x: np.ndarray) -> np.ndarray:
    n = len(x) // FRAME
    f = x[: n * FRAME].reshape(n, FRAME)
    return 10 * np.log10(np.mean(f * f, axis=1) / 32768.0**2 + 1e-12)


def label_speech(clean: np.ndarray, below_peak_db: float = 35.0, floor_dbfs: float = -60.0) -> np.ndarray:
    """Ground truth per 20 ms frame from the clean signal's energy."""
    lv = frame_levels_db(clean)
    return lv > max(np.percentile(lv, 99) - below_peak_db, floor_dbfs)


# ---- noises -------------------------------------------------------------------------


def white(n: int, rng: np.random.Generator) -> np.ndarray:
    return rng.standard_normal(n).astype(np.float32)


def pink(n: int, rng: np.random.Generator) -> np.ndarray:
    spec = np.fft.rfft(rng.standard_normal(n))
    f = np.arange(len(spec), dtype=float)
    f[0] = 1
    return np.fft.irfft(spec / np.sqrt(f), n).astype(np.float32)


def hvac(n: int, rng: np.random.Generator) -> np.ndarray:
    """Low-frequency rumble (brown-ish noise < 300 Hz) plus 50/100/150 Hz mains hum."""
    spec = np.fft.rfft(rng.standard_normal(n))
    f = np.fft.rfftfreq(n, 1 / RATE)
    shape = 1 / np.maximum(f, 20) * (1 / (1 + (f / 300) ** 4))
    rumble = np.fft.irfft(spec * shape, n)
    rumble /= np.std(rumble) + 1e-12
    t = np.arange(n) / RATE
    hum = 0.8 * np.sin(2 * np.pi * 50 * t) + 0.5 * np.sin(2 * np.pi * 100 * t + 1) + 0.2 * np.sin(2 * np.pi * 150 * t)
    return (rumble + hum).astype(np.float32)


def babble(n: int, rng: np.random.Generator, talkers: int = 6) -> np.ndarray:
    out = np.zeros(n, dtype=np.float32)
    for k in range(talkers):
        parts = [
            tts(BABBLE_TEXT[(k + j) % len(BABBLE_TEXT)], VOICES[(k + 2) % len(VOICES)], 150 + 10 * k)
            for j in range(len(BABBLE_TEXT))
        ]
        s = np.concatenate(parts)
        s = np.tile(s, n // len(s) + 2)
        off = int(rng.integers(0, len(s) - n))
        seg = s[off : off + n]
        out += seg / (np.std(seg) + 1e-9)
    return out


def music(n: int, rng: np.random.Generator) -> np.ndarray:
    """Notes with harmonics and decay, 2-3 voices: steady tonal, not speech."""
    out = np.zeros(n, dtype=np.float32)
    t_note = int(0.25 * RATE)
    for _voice in range(3):
        pos = int(rng.integers(0, t_note))
        while pos < n:
            dur = int(t_note * rng.choice([1, 2, 4]))
            f0 = 110 * 2 ** (rng.integers(0, 36) / 12)
            t = np.arange(min(dur, n - pos)) / RATE
            env = np.exp(-t * 3) * np.minimum(1, t * 200)
            note = sum((0.6**h) * np.sin(2 * np.pi * f0 * (h + 1) * t) for h in range(4))
            out[pos : pos + len(t)] += (env * note).astype(np.float32)
            pos += dur
    return out


NOISES = {"white": white, "pink": pink, "babble": babble, "hvac": hvac, "music": music}


def noise(kind: str, n: int, seed: int = 0) -> np.ndarray:
    return NOISES[kind](n, np.random.default_rng(seed))


def at_dbfs(x: np.ndarray, dbfs: float) -> np.ndarray:
    rms = float(np.sqrt(np.mean(x.astype(np.float64) ** 2))) + 1e-12
    return (x * (32768.0 * 10 ** (dbfs / 20) / rms)).astype(np.float32)


def mix(clean: np.ndarray, noise_sig: np.ndarray, snr_db: float, labels: np.ndarray | None = None) -> np.ndarray:
    """Add noise so that speech-frame power / noise power = snr_db."""
    if labels is None:
        labels = label_speech(clean)
    frames = clean[: len(labels) * FRAME].reshape(len(labels), FRAME)
    p_speech = float(np.mean(frames[labels].astype(np.float64) ** 2))
    nz = noise_sig[: len(clean)].astype(np.float64)
    p_noise = float(np.mean(nz**2)) + 1e-12
    scale = np.sqrt(p_speech / (p_noise * 10 ** (snr_db / 10)))
    return np.clip(clean + scale * nz, -32768, 32767).astype(np.float32)


def silence(seconds: float) -> np.ndarray:
    return np.zeros(int(seconds * RATE), dtype=np.float32)


def to_pcm16(x: np.ndarray) -> bytes:
    return np.clip(np.round(x), -32768, 32767).astype("<i2").tobytes()
