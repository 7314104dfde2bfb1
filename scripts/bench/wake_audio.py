"""The wake-word benchmark's acceptance audio (scripts/bench/wake.py): synthetic voices and rooms, the
real recordings with where their words are, and a phrase laid in noise at an SNR over its words."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from scripts import REPO
from scripts.bench import audio_corpus as ac
from scripts.bench.wake_conditions import (
    ACCEPT_NOISES,
    ACCEPT_SNRS,
    ESPEAK_PITCH,
    ESPEAK_RATE,
    FLITE_CENTS,
    FLITE_STRETCH,
    LATE_S,
    NOISE_SEED_STEP,
    RATE,
)


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


def draw_seed(clip_id: int, draw: int) -> int:
    """The noise seed of trial `clip_id` in draw `draw` (0: every record's; k > 0: another draw of the noise)."""
    return clip_id + draw * NOISE_SEED_STEP


def noise_for(kind: str, n: int, seed: int, music: list[np.ndarray]) -> np.ndarray:
    if kind == "music":
        track = music[seed % len(music)]
        off = (seed * 7919 * RATE) % max(1, len(track) - n)
        reps = int(np.ceil((off + n) / len(track)))
        return np.tile(track, reps)[off : off + n].astype(np.float32)
    return ac.noise(kind, n, seed=seed)


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
    draw: int = 0,
) -> tuple[np.ndarray, float, float]:
    """The phrase `x` (its first `phrase_len` samples are the words) after `lead_s` + 0-0.8 s of
    the noise alone, mixed with `kind` noise at `snr` dB over the phrase -> (clip, start s, end s).
    `context`: the recording's own audio (before, after) its words, laid under the noise right
    before and after them (as much as the clip holds: at most the lead, and LATE_S + 0.2 s after);
    the clip's length, noise and SNR (over the words) are the same as without it. `draw` k > 0: another
    draw of the noise (seed clip_id + k * NOISE_SEED_STEP), the same lead and everything else."""
    lead = lead_s + 0.4 * (clip_id % 3)
    clean = placed(x, lead, LATE_S + 0.2, context)
    labels = np.zeros(len(clean) // 320, dtype=bool)
    a, b = int(lead * RATE) // 320, int((lead * RATE + phrase_len) // 320)
    labels[a:b] = True  # SNR over the phrase: its frames are the speech
    noisy = ac.mix(clean, noise_for(kind, len(clean), draw_seed(clip_id, draw), music), snr, labels)
    return noisy, lead, lead + phrase_len / RATE


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


def trial_clip_id(recording: int, kind: str | None = None) -> int:
    """The noise draw (`recording_in_noise`'s clip_id) of the `recording`-th recording (sorted by file
    name) in `kind` noise, or its clean trial: the one rule every wake tool and test uses, so that their
    trials hear the same noise and one tool's cached scores replay another's (4 draws per recording,
    one per ACCEPT_NOISES kind: the numbers of every record since stop 34)."""
    return 1000 + 4 * recording + (ACCEPT_NOISES.index(kind) if kind is not None else 0)


def recording_in_noise(
    rec: Recording, kind: str, snr: float, clip_id: int, music, draw: int = 0
) -> tuple[np.ndarray, float, float]:
    """A recording's words in `kind` noise at `snr` dB over them, after 2-2.8 s of the noise, with
    the recording's own audio around them, as a detector in the room hears it (noisy_clip).

    Not the words alone (before stop 36): label_speech drops every frame more than 35 dB under
    the file's loudest, which in some recordings is speech, e.g. 198.wav's 240 ms of breathy
    onset rising from -58 to -38 dB (zero-crossing rate 0.3-0.5) into the "a", or 18.wav's 200 ms
    decay of the last "a" (-35 to -50 dB). It hardly moves the figure (scripts/bench/wake_trim.py,
    alexa, the same noise): the whole file against the words alone +4, -1, -1, -2 of 660 trials
    at 10 dB over 4 draws of the noise, -2..+1 at 5 dB; another draw moves 10 dB by up to 9
    trials (docs/benchmarks.md, fourth pass). Kept because it is what the room hears."""
    return noisy_clip(rec.words, len(rec.words), kind, snr, clip_id, music, lead_s=2.0, context=rec.context, draw=draw)


def recording_trials(
    i: int, rec: Recording, music, draw: int = 0
) -> Iterator[tuple[float, str, np.ndarray, float, float]]:
    """The `i`-th recording's acceptance trials, as every wake tool runs them: each SNR of ACCEPT_SNRS
    by each noise of ACCEPT_NOISES, with the trial's own noise draw (trial_clip_id; `draw` k > 0: the
    k-th other draw of every noise, recording_in_noise); yields (snr, kind, clip, start, end) as
    recording_in_noise gives them."""
    for snr in ACCEPT_SNRS:
        for kind in ACCEPT_NOISES:
            clip, start, end = recording_in_noise(rec, kind, snr, trial_clip_id(i, kind), music, draw)
            yield snr, kind, clip, start, end


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
