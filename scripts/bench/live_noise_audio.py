"""Audio for the continuous-noise live benchmark (scripts/bench/live_noise.py).

One *condition* is one continuous recording, the same every run (fixed seed):

    [lead-in: noise only] utt 1 [2 s pause] utt 2 [2 s pause] ... utt N [pause + tail]

with the noise running through the lead-in, the pauses and the tail, as in a room with a fan
or a TV. Speech is real recorded speech (scripts/bench/speech_corpus.py: pocketsphinx-testdata and
Asterisk prompts), every utterance scaled to the same active-speech level (SPEECH_DBFS, the
mean power of its speech frames); the noise is scaled once for the whole recording so that
speech level / noise power = the condition's SNR. A -70 dBFS pink room tone is always there
(no real microphone gives digital silence), so "clean" means that room tone alone.

Noise kinds:
- white, pink, hvac (rumble < 300 Hz + 50/100/150 Hz hum): scripts/bench/audio_corpus.py;
- fan: broadband airflow (most energy 100-1500 Hz), blade-pass tones at 100 Hz and harmonics
  with slow drift, slow turbulence modulation (synthetic; see `fan`);
- babble: 6 overlapping talkers of real speech that is not in the test set: Asterisk prompts
  not used as test utterances (natural and pitch-shifted by resampling to sound like other
  speakers), the other pocketsphinx-testdata recordings (goforward, numbers, something,
  tidigits: other speakers), and one espeak-ng voice;
- music: the Asterisk music-on-hold tracks (real recorded music, CC-BY-SA-3.0);
- tv: music 6 dB below one talker (real speech with pauses, pitch-shifted Asterisk prompts).

`pauses` conditions use the same utterances with a 300-700 ms pause inserted inside each
sentence of 4 or more words, at the quietest point between words in the middle of it.

`room` conditions (issue 22: "room", "room-KIND-SNR") mirror a household instead: nothing is
normalised per clip. Every utterance keeps the level it was recorded at, plus one fixed gain per
talker for where that talker stands (ROOM_TALKER_GAIN_DB: the Asterisk speaker near the node, the
card-name speaker across the table, the LibriVox reader, already a soft recording, across the
room), so active speech spans about -14 to -39 dBFS; the noise runs at one level for the whole
recording, set against the talkers' mean speech power (linear mean over the utterances), so a
soft talker sits well below the room noise, as one does in a real room.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from scripts.bench import audio_corpus as ac
from scripts.bench import speech_corpus as sc

RATE = 16000
FRAME = 320
SPEECH_DBFS = -26.0  # active speech level of every utterance
ROOM_DBFS = -70.0  # room tone under everything
LEAD_S = 4.0  # noise before the first utterance (trackers settle; the VAD hears the room first)
PAUSE_S = 2.0
TAIL_S = 3.0  # noise after the last pause, so the last endpoint is seen live
INNER_PAUSES_MS = (300, 400, 500, 600, 700)
KINDS = ("white", "pink", "babble", "hvac", "fan", "music", "tv")
SNRS = (20, 10, 5, 0)
# Room protocol: gain per talker (dB) on top of the recording's own level. Natural active levels:
# allison -14.4..-17.7 dBFS, cards-speaker -14.5..-20.6, librivox-reader -22.4..-27.1; with these
# gains -14..-18 (near), -20..-27 (middle), -34..-39 (far / soft-spoken). Mean speech power: -17.5 dBFS.
ROOM_TALKER_GAIN_DB = {"allison": 0.0, "cards-speaker": -6.0, "librivox-reader": -12.0}
AUDIO_VERSION = 4  # bump when the audio changes (cached tracks and transcribe results)
PS_EXTRA = ("goforward.raw", "numbers.raw", "something.raw", "tidigits/dhd.2934z.raw")


@dataclass(frozen=True)
class Condition:
    name: str  # "clean", "pink-10", "pauses", "pauses-pink-10", "noise-pink" (noise alone)
    kind: str  # "clean" or a noise kind
    snr: float | None  # None: clean (room tone only) or noise alone
    pauses: bool = False
    noise_alone: bool = False
    room: bool = False  # talkers at their natural levels (ROOM_TALKER_GAIN_DB), not normalised

    @staticmethod
    def parse(name: str) -> Condition:
        rest, pauses, room = name, False, False
        if rest == "room" or rest.startswith("room-"):
            room = True
            rest = rest[len("room") :].lstrip("-") or "clean"
            if rest.startswith(("pauses", "noise-")):
                raise ValueError(f"condition {name!r}: room takes clean or KIND-SNR")
        if rest.startswith("noise-"):
            kind = rest[len("noise-") :]
            if kind not in KINDS:
                raise ValueError(f"unknown noise kind in {name!r} (kinds: {', '.join(KINDS)})")
            return Condition(name, kind, None, noise_alone=True)
        if rest == "pauses" or rest.startswith("pauses-"):
            pauses = True
            rest = rest[len("pauses") :].lstrip("-") or "clean"
        if rest == "clean":
            return Condition(name, "clean", None, pauses, room=room)
        kind, _, snr = rest.rpartition("-")
        if kind not in KINDS:
            raise ValueError(
                f"unknown condition {name!r}: expected clean, KIND-SNR, pauses[-KIND-SNR], room[-KIND-SNR] or "
                f"noise-KIND (kinds: {', '.join(KINDS)})"
            )
        try:
            return Condition(name, kind, float(snr), pauses, room=room)
        except ValueError:
            raise ValueError(f"bad SNR in condition {name!r}") from None


@dataclass
class Utt:
    name: str
    text: str
    clip_start: int  # sample where the clip (with its own edges) starts in the track
    clip_end: int
    speech_start: int  # first / one past the last sample of speech (20 ms frames, clean energy)
    speech_end: int
    inner_pause_ms: int = 0  # pauses conditions: the silence inserted inside this sentence
    level_dbfs: float = SPEECH_DBFS  # active speech level (mean power of its speech frames)
    speaker: str = ""


@dataclass
class Track:
    condition: Condition
    audio: np.ndarray  # float32, int16 scale
    utts: list[Utt]
    noise_dbfs: float | None

    @property
    def duration_s(self) -> float:
        return len(self.audio) / RATE


# ---- speech --------------------------------------------------------------------------


def test_utterances(n: int) -> list[sc.Utterance]:
    """The test set: every pocketsphinx-testdata clip (10) + Asterisk prompts, n in all."""
    return sc.real_speech(n_asterisk=max(0, n - 10), seed=0)[:n]


def speech_level(x: np.ndarray) -> float:
    lab = ac.label_speech(x)
    f = x[: len(lab) * FRAME].reshape(len(lab), FRAME).astype(np.float64)
    return float(np.mean(f[lab] ** 2)) if lab.any() else float(np.mean(f**2))


def at_speech_dbfs(x: np.ndarray, dbfs: float) -> np.ndarray:
    target = (32768.0**2) * 10 ** (dbfs / 10)
    return (x * np.sqrt(target / (speech_level(x) + 1e-9))).astype(np.float32)


def speech_span(x: np.ndarray) -> tuple[int, int]:
    idx = np.nonzero(ac.label_speech(x))[0]
    return int(idx[0]) * FRAME, int(idx[-1] + 1) * FRAME


def split_point(x: np.ndarray) -> int | None:
    """A word boundary near the middle of the speech: the quietest 60 ms in 35-65 % of it."""
    s0, s1 = speech_span(x)
    lv = ac.frame_levels_db(x)
    lo, hi = (s0 + int(0.35 * (s1 - s0))) // FRAME, (s0 + int(0.65 * (s1 - s0))) // FRAME
    if hi - lo < 4:
        return None
    win = np.convolve(lv[lo:hi], np.ones(3) / 3, mode="valid")
    return (lo + int(np.argmin(win)) + 1) * FRAME + FRAME // 2


def with_inner_pause(u: sc.Utterance, pause_ms: int) -> np.ndarray | None:
    if len(u.text.split()) < 4:
        return None
    cut = split_point(u.audio)
    if cut is None:
        return None
    pad = np.zeros(int(pause_ms * RATE / 1000), np.float32)
    return np.concatenate([u.audio[:cut], pad, u.audio[cut:]])


# ---- noise ---------------------------------------------------------------------------


def fan(n: int, rng: np.random.Generator) -> np.ndarray:
    """A room fan: airflow noise shaped like a fan's (rising to ~300 Hz, flat to 1 kHz, falling
    12 dB/octave above), blade-pass tone at 100 Hz with 3 harmonics drifting +-1 %, and slow
    turbulence (+-15 % amplitude at 0.3-1.1 Hz)."""
    spec = np.fft.rfft(rng.standard_normal(n))
    f = np.fft.rfftfreq(n, 1 / RATE)
    shape = (f / 300) / (1 + (f / 300) ** 2) ** 0.5 / (1 + (f / 1000) ** 4) ** 0.5
    air = np.fft.irfft(spec * shape, n)
    air /= np.std(air) + 1e-12
    t = np.arange(n) / RATE
    drift = 1 + 0.01 * np.sin(2 * np.pi * 0.07 * t + rng.uniform(0, 6.3))
    phase = 2 * np.pi * np.cumsum(100.0 * drift) / RATE
    tones = sum(a * np.sin(h * phase + rng.uniform(0, 6.3)) for h, a in ((1, 0.35), (2, 0.25), (3, 0.15), (4, 0.1)))
    turb = 1 + 0.15 * np.sin(2 * np.pi * 0.3 * t) * np.sin(2 * np.pi * 1.1 * t + 1)
    return ((air + tones) * turb).astype(np.float32)


def _read_raw(path: Path) -> np.ndarray:
    return np.frombuffer(path.read_bytes(), dtype="<i2").astype(np.float32)


def _shift(x: np.ndarray, factor: float) -> np.ndarray:
    """Pitch and tempo by `factor` (resampling): another-sounding speaker from the same recording."""
    if factor == 1.0:
        return x
    import soxr

    return soxr.resample(x, RATE * factor, RATE).astype(np.float32)


def _talker(clips: list[np.ndarray], n: int, rng: np.random.Generator, gap_s: tuple[float, float]) -> np.ndarray:
    """Clips one after the other in a random order with gaps, to length n, at equal speech level."""
    out, total = [], 0
    while total < n:
        for i in rng.permutation(len(clips)):
            x = at_speech_dbfs(clips[i], -26.0)
            g = np.zeros(int(rng.uniform(*gap_s) * RATE), np.float32)
            out += [x, g]
            total += len(x) + len(g)
            if total >= n:
                break
    s = np.concatenate(out)
    off = int(rng.integers(0, max(1, len(s) - n)))
    return s[off : off + n]


def _other_prompts(exclude: set[str]) -> list[np.ndarray]:
    return [u.audio for u in sc.asterisk() if u.name not in exclude]


def _ps_extra() -> list[np.ndarray]:
    return [_read_raw(sc.PS_DATA / p) for p in PS_EXTRA if (sc.PS_DATA / p).exists()]


def babble(n: int, rng: np.random.Generator, exclude: set[str]) -> np.ndarray:
    prompts = _other_prompts(exclude)
    extra = _ps_extra() or prompts
    talkers = [
        _talker(prompts, n, rng, (0.1, 0.6)),
        _talker([_shift(x, 0.82) for x in prompts[::2]], n, rng, (0.1, 0.6)),
        _talker([_shift(x, 1.12) for x in prompts[1::2]], n, rng, (0.1, 0.6)),
        _talker(extra, n, rng, (0.1, 0.5)),
        _talker([_shift(x, 0.9) for x in extra], n, rng, (0.1, 0.5)),
        _talker([ac.tts(t, "en-gb+m3", 150) for t in ac.BABBLE_TEXT], n, rng, (0.1, 0.5)),
    ]
    return np.sum([t / (np.std(t) + 1e-9) for t in talkers], axis=0).astype(np.float32)


def music(n: int, rng: np.random.Generator) -> np.ndarray:
    tracks = sc.music_tracks()
    s = np.concatenate([x for _, x in tracks])
    s = np.tile(s, n // len(s) + 2)
    off = int(rng.integers(0, len(s) - n))
    return s[off : off + n].astype(np.float32)


def tv(n: int, rng: np.random.Generator, exclude: set[str]) -> np.ndarray:
    """A TV programme: one talker (real speech, 0.3-1.5 s between phrases) over music 6 dB down."""
    talker = _talker([_shift(x, 0.88) for x in _other_prompts(exclude)[::3]], n, rng, (0.3, 1.5))
    bed = music(n, rng)
    return (talker / (np.std(talker) + 1e-9) + 0.5 * bed / (np.std(bed) + 1e-9)).astype(np.float32)


def make_noise(kind: str, n: int, seed: int, exclude: set[str]) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == "fan":
        return fan(n, rng)
    if kind == "babble":
        return babble(n, rng, exclude)
    if kind == "music":
        return music(n, rng)
    if kind == "tv":
        return tv(n, rng, exclude)
    return ac.NOISES[kind](n, rng)


def scaled(x: np.ndarray, dbfs: float) -> np.ndarray:
    return ac.at_dbfs(x, dbfs)


# ---- tracks --------------------------------------------------------------------------


def build_track(
    cond: Condition, n_utts: int, seed: int, noise_alone_s: float = 600.0, speech_dbfs: float = SPEECH_DBFS
) -> Track:
    speech = test_utterances(n_utts)
    exclude = {u.name for u in speech}
    rng_seed = seed * 1000 + (int(hashlib.sha1(cond.kind.encode()).hexdigest()[:6], 16) % 997)
    if cond.noise_alone:
        n = int(noise_alone_s * RATE)
        room = scaled(ac.noise("pink", n, seed=seed + 7), ROOM_DBFS)
        nz = make_noise(cond.kind, n, rng_seed, exclude)
        level = NOISE_ALONE_DBFS
        return Track(cond, np.clip(room + scaled(nz, level), -32768, 32767).astype(np.float32), [], level)
    parts, utts = [np.zeros(int(LEAD_S * RATE), np.float32)], []
    pos = len(parts[0])
    k = 0
    levels = []
    for u in speech:
        if cond.room:
            x = (u.audio * 10 ** (ROOM_TALKER_GAIN_DB.get(u.speaker, 0.0) / 20)).astype(np.float32)
        else:
            x = at_speech_dbfs(u.audio, speech_dbfs)
        levels.append(speech_level(x))
        pause_ms = 0
        if cond.pauses:
            p = INNER_PAUSES_MS[k % len(INNER_PAUSES_MS)]
            y = with_inner_pause(sc.Utterance(u.name, u.text, x, u.speaker, u.source), p)
            if y is not None:
                x, pause_ms = y, p
                k += 1
        s0, s1 = speech_span(x)
        level_db = round(10 * float(np.log10(levels[-1] / 32768.0**2 + 1e-12)), 2)
        utts.append(Utt(u.name, u.text, pos, pos + len(x), pos + s0, pos + s1, pause_ms, level_db, u.speaker))
        parts += [x, np.zeros(int(PAUSE_S * RATE), np.float32)]
        pos += len(x) + int(PAUSE_S * RATE)
    parts.append(np.zeros(int(TAIL_S * RATE), np.float32))
    clean = np.concatenate(parts)
    n = len(clean)
    audio = clean + scaled(ac.noise("pink", n, seed=seed + 7), ROOM_DBFS)
    noise_dbfs = None
    if cond.room:  # the noise against the talkers' mean speech power
        speech_dbfs = 10 * float(np.log10(np.mean(levels) / 32768.0**2))
    if cond.kind != "clean":
        noise_dbfs = round(speech_dbfs - cond.snr, 2)
        audio = audio + scaled(make_noise(cond.kind, n, rng_seed, exclude), noise_dbfs)
    return Track(cond, np.clip(audio, -32768, 32767).astype(np.float32), utts, noise_dbfs)


NOISE_ALONE_DBFS = -35.0  # noise-alone level: a loud room (speech at -26 dBFS would be 9 dB above it)


def cached_track(
    cond: Condition, n_utts: int, seed: int, noise_alone_s: float, speech_dbfs: float = SPEECH_DBFS
) -> Track:
    """build_track, cached on disk (babble and the G.722 prompts take a while to make)."""
    key = hashlib.sha1(
        json.dumps([AUDIO_VERSION, cond.name, n_utts, seed, noise_alone_s, speech_dbfs, NOISE_ALONE_DBFS]).encode()
    ).hexdigest()[:16]
    base = ac.cache_dir() / f"live-noise-{key}"
    pcm, meta = base.with_suffix(".raw"), base.with_suffix(".json")
    if pcm.exists() and meta.exists():
        m = json.loads(meta.read_text())
        audio = np.frombuffer(pcm.read_bytes(), dtype="<i2").astype(np.float32)
        return Track(cond, audio, [Utt(**u) for u in m["utts"]], m["noise_dbfs"])
    t = build_track(cond, n_utts, seed, noise_alone_s, speech_dbfs)
    tmp = pcm.with_suffix(".tmp")
    tmp.write_bytes(ac.to_pcm16(t.audio))
    tmp.replace(pcm)
    meta.write_text(json.dumps({"utts": [vars(u) for u in t.utts], "noise_dbfs": t.noise_dbfs}))
    return Track(cond, np.frombuffer(ac.to_pcm16(t.audio), dtype="<i2").astype(np.float32), t.utts, t.noise_dbfs)


def level_thirds(utts: list[Utt]) -> dict[str, list[int]]:
    """Utterance indices by talker level: the loudest third, the middle and the quietest third."""
    order = sorted(range(len(utts)), key=lambda k: -utts[k].level_dbfs)
    a, b = round(len(order) / 3), round(2 * len(order) / 3)
    return {"loud": sorted(order[:a]), "middle": sorted(order[a:b]), "quiet": sorted(order[b:])}
