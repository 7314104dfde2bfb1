"""Real recorded speech (and real music) for benchmarks and tests, all from Debian packages.

Every accuracy figure needs human speech, not only a synthetic voice. What ships free in
Debian 12 / Raspberry Pi OS:

| package | what | speakers | licence |
|---|---|---|---|
| pocketsphinx-testdata | 5 LibriVox sentences (Sense and Sensibility), 5 card names, 16 kHz | 2 | BSD-2 |
| pocketsphinx-testdata (raw) | "go forward ten meters", a TIDIGITS-style digit string (16 kHz raw) | 1-2 | BSD-2 |
| alsa-utils | speaker-test's 8 channel names ("Front Left", ...), 48 kHz | 1 | GPL-2 |
| asterisk-core-sounds-en (+ -g722, -wav) | ~570 prompts (core-sounds-en.txt) | Allison Smith | CC-BY-SA-3.0 |
| asterisk-moh-opsound-wav | 5 music tracks, ~4 min each, 8 kHz | - | CC-BY-SA-3.0 |
| warzone2100-data | 30 tutorial sentences (other_talkers()), 11.025 kHz | 1 narrator | GPL-2+ |
| openarena-data | 32 team-chat commands (other_talkers()), 16 kHz | 1 ("rott") | GPL-2+ |

The Asterisk prompts come in G.722 (16 kHz wideband, decoded with the `g722` package when it is
installed: benchmark venv only) and 8 kHz WAV (resampled with soxr): the wideband version is used
when it can be decoded. Prompts whose transcript is not plain speech (key names like '*' or '#',
tones in brackets, stage directions in parentheses such as the silence/N prompts, fragments
starting or ending with '...') are left out.

Everything is 16 kHz mono float32 in int16 scale, like scripts/bench/audio_corpus.py, whose noise
generators and mixing work on these clips too.
"""

from __future__ import annotations

import gzip
import re
import subprocess
import sys
import wave
import zipfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

RATE = 16000
PS_DATA = Path("/usr/share/pocketsphinx/test/data")
ASTERISK_SOUNDS = Path("/usr/share/asterisk/sounds/en_US_f_Allison")
ASTERISK_TEXT = Path("/usr/share/doc/asterisk-core-sounds-en/core-sounds-en.txt.gz")
ASTERISK_MOH = Path("/usr/share/asterisk/moh")
ALSA_SOUNDS = Path("/usr/share/sounds/alsa")
# Warzone 2100's game data (a zip): the tutorial narrator's clips (audio/tutorial/tutN.ogg, Ogg Vorbis, 11.025 kHz
# mono) and script/tutorial.js, which shows a caption with each clip: {"audio": "tut1.ogg", ..., "message": _("...")}.
WZ_DATA = Path("/usr/share/games/warzone2100/base.wz")
# Captions that are not what the narrator says (a longer or another sentence: tut43's caption is "All new units will
# drive to this location once built", the clip says "This is initially positioned next to your factory"): left out.
# The rule, applied once (2026-12-06): Whisper base's transcript differs from the caption in more than 30 % of the
# caption's words (tiny.en heard the same sentences in all 12). The 30 kept clips still have small caption-vs-speech
# differences (tut19's caption "Left click the flashing BUILD icon", both models hear no "flashing"): base's WER
# on them is 8.0 % (22 of 274 words, scripts/bench/scoring.py), about the floor of any model's WER on this set.
# The other 38 clips of audio/tutorial have no caption (tut6, tut14, ...).
WZ_NOT_CAPTION = frozenset("tut4 tut5 tut16 tut28 tut34 tut40 tut41 tut43 tut45 tut47 tut50 tut51".split())
# OpenArena's team-chat voice "rott" (RottKing, a human voice; the other set, festivoxmale, is synthetic): Ogg Vorbis
# 16 kHz clips in the missionpack's pk3 (a zip), each named with its chat text in scripts/male1.voice:
#     sound\voices\rott\haveflag.ogg	"I have the flag!"
OA_DATA = Path("/usr/share/games/openarena/missionpack/mp-pak0.pk3")
# Chat-text spellings of what is said, as the scorer's normaliser spells them ("I'm goin' in"): Whisper base then
# misses 6 of the 32 clips' 110 normalised words (5.5 %; 8 with the chat spellings), tiny.en 13.
_OA_FIXES = {"campin": "camping", "goin'": "going"}
_OA_LINE = re.compile(r'sound\\voices\\rott\\(\w+)\.ogg\s+"([^"]+)"')
_WZ_CAPTION = re.compile(r'"audio":\s*"(tut\d+)\.ogg"[^{}]*?"message":\s*_\("([^"]+)"\)')
# The headerless 16 kHz recordings of pocketsphinx-testdata whose words its own tests state (the
# decoder tests expect "go forward ten meters"; TIDIGITS file names spell the digits, z = zero).
# numbers.raw and something.raw have no transcript in the package: left out.
PS_RAW = (("goforward.raw", "go forward ten meters"), ("tidigits/dhd.2934z.raw", "two nine three four zero"))
# What `make` installs (scripts/apt-ensure) for the benchmarks that use this module.
APT_PACKAGES = (
    "pocketsphinx-testdata",
    "asterisk-core-sounds-en",
    "asterisk-core-sounds-en-g722",
    "asterisk-core-sounds-en-wav",
    "asterisk-moh-opsound-wav",
    "warzone2100-data",
    "openarena-data",
)

# Spelling slips in core-sounds-en.txt (the recording says the word right).
_TEXT_FIXES = {"represenatives": "representatives"}
# Parentheses mark stage directions: "silence/8: (8 seconds of silence)" is not speech.
_NOT_SPEECH = re.compile(r"[\[\]()*#@/<>=]|^\.\.\.|\.\.\.$|www\.|\b[A-Z]{2,}\b")


@dataclass(frozen=True)
class Utterance:
    name: str  # source/id, unique
    text: str  # reference transcript as the source gives it
    audio: np.ndarray  # float32, int16 scale, 16 kHz mono
    speaker: str
    source: str

    @property
    def duration_s(self) -> float:
        return len(self.audio) / RATE


def _read_wav(path: Path) -> tuple[np.ndarray, int]:
    with wave.open(str(path)) as w:
        if w.getnchannels() != 1 or w.getsampwidth() != 2:
            raise ValueError(f"{path}: expected 16-bit mono")
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32), w.getframerate()


def _to_16k(x: np.ndarray, rate: int) -> np.ndarray:
    if rate == RATE:
        return x.astype(np.float32)
    import soxr

    return soxr.resample(x.astype(np.float32), rate, RATE).astype(np.float32)


def pocketsphinx() -> list[Utterance]:
    """The LibriVox sentences and card names of pocketsphinx-testdata (10 clips, 2 speakers)."""
    out = []
    for sub, tfile, speaker in (
        ("librivox", "transcription", "librivox-reader"),
        ("cards", "cards.transcription", "cards-speaker"),
    ):
        tpath = PS_DATA / sub / tfile
        if not tpath.exists():
            continue
        for line in tpath.read_text().splitlines():
            m = re.match(r"<s>(.*)</s>\s*\((\S+)\)", line.strip())
            if m:
                audio, rate = _read_wav(PS_DATA / sub / f"{m.group(2)}.wav")
                out.append(
                    Utterance(
                        f"{sub}/{m.group(2)}",
                        m.group(1).strip(),
                        _to_16k(audio, rate),
                        speaker,
                        "pocketsphinx-testdata",
                    )
                )
    return out


def more_talkers() -> list[Utterance]:
    """Real English speech with known words beyond pocketsphinx(), from other talkers than Asterisk's:
    the pocketsphinx-testdata raw clips (PS_RAW; both probably one developer's voice, "dhd") and
    alsa-utils' speaker-test voice saying the channel names (Noise.wav is not speech)."""
    out = []
    for rel, text in PS_RAW:
        path = PS_DATA / rel
        if path.exists():
            audio = np.frombuffer(path.read_bytes(), dtype="<i2").astype(np.float32)
            out.append(Utterance(f"pocketsphinx/{path.stem}", text, audio, "sphinx-raw", "pocketsphinx-testdata"))
    for path in sorted(ALSA_SOUNDS.glob("*_*.wav")):
        audio, rate = _read_wav(path)
        text = path.stem.replace("_", " ").lower()
        out.append(Utterance(f"alsa/{path.stem}", text, _to_16k(audio, rate), "alsa-voice", "alsa-utils"))
    return out


def _decode_ogg(data: bytes) -> np.ndarray:
    """Ogg Vorbis bytes -> 16 kHz mono float32 (int16 scale), through sox (scripts/apt-ensure installs it).
    -D: no dither. sox dithers a 16-bit output by default, with a new random draw in each call: the same clip
    then came out different every time, and tiny.en made 26-29 errors on the 30 narrator clips from one
    run to the next (the engine is deterministic: same audio, same text)."""
    to_raw = ["-t", "raw", "-r", str(RATE), "-c", "1", "-b", "16", "-e", "signed-integer", "-"]
    raw = subprocess.run(
        ["sox", "-q", "-D", "-t", "ogg", "-", *to_raw], input=data, check=True, capture_output=True
    ).stdout
    return np.frombuffer(raw, dtype="<i2").astype(np.float32)


def other_talkers() -> list[Utterance]:
    """Real English speech from talkers that none of the other sets has, each set empty where its package is
    not installed (missing_packages() leaves them out: the sets above do not need them):
    - Warzone 2100's tutorial narrator (warzone2100-data; 30 sentences, 274 words, 1.7-4.6 s each, 88 s in
      all), each clip with the caption the game shows as its reference, less the captions that are another
      sentence (WZ_NOT_CAPTION). Narrowband: the clips are 11.025 kHz.
    - OpenArena's "rott" team-chat voice (openarena-data; 32 short commands, 103 words, 0.4-1.7 s each, 33 s
      in all, wideband 16 kHz), each with its chat text ("I have the flag!")."""
    return _warzone_tutorial() + _openarena_rott()


def _warzone_tutorial() -> list[Utterance]:
    if not WZ_DATA.exists():
        return []
    out = []
    with zipfile.ZipFile(WZ_DATA) as wz:
        script = wz.read("script/tutorial.js").decode("utf-8")
        for clip, caption in _WZ_CAPTION.findall(script):
            if clip in WZ_NOT_CAPTION:
                continue
            audio = _decode_ogg(wz.read(f"audio/tutorial/{clip}.ogg"))
            out.append(Utterance(f"warzone2100/{clip}", caption, audio, "wz2100-narrator", "warzone2100-data"))
    return out


def _openarena_rott() -> list[Utterance]:
    """Each clip once, with the first text male1.voice gives it; okay.ogg, named there, is not in the pk3."""
    if not OA_DATA.exists():
        return []
    out: dict[str, Utterance] = {}
    with zipfile.ZipFile(OA_DATA) as pk3:
        clips = set(pk3.namelist())
        for clip, text in _OA_LINE.findall(pk3.read("scripts/male1.voice").decode("utf-8")):
            path = f"sound/voices/rott/{clip}.ogg"
            if clip not in out and path in clips:
                audio = _decode_ogg(pk3.read(path))
                text = " ".join(_OA_FIXES.get(w, w) for w in text.split())
                out[clip] = Utterance(f"openarena/{clip}", text, audio, "openarena-rott", "openarena-data")
    return sorted(out.values(), key=lambda u: u.name)


def _asterisk_texts() -> dict[str, str]:
    texts = {}
    with gzip.open(ASTERISK_TEXT, "rt", encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith(";") or ":" not in line:
                continue
            name, text = line.split(":", 1)
            words = [_TEXT_FIXES.get(w, w) for w in text.split()]
            texts[name.strip()] = " ".join(words)
    return texts


@lru_cache(maxsize=1)
def g722_module():
    """The `g722` package's module (decodes the prompts' G.722), or None where it is not installed
    (`.venv`, the tests' venv: there the 8 kHz WAVs are upsampled); the fallback is said once, on stderr."""
    try:
        import G722  # the `g722` package (.venv-bench, scripts/bench/requirements.txt)
    except ImportError:
        print(
            "speech_corpus: the g722 package is not installed: the Asterisk prompts are their 8 kHz WAVs "
            "upsampled (narrowband), not G.722 (16 kHz); .venv-bench has it",
            file=sys.stderr,
            flush=True,
        )
        return None
    return G722


def asterisk_band() -> str:
    """Which Asterisk prompts this venv gives, for a benchmark's results: "wideband" (G.722 decoded at
    16 kHz), "narrowband" (the 8 kHz WAVs upsampled) or "none" (asterisk-core-sounds-en not installed).
    The wake benchmark's false accepts depend on it (docs/benchmarks.md#wake-word)."""
    probe = ASTERISK_SOUNDS / "auth-thankyou"
    if probe.with_suffix(".g722").exists() and g722_module() is not None:
        return "wideband"
    return "narrowband" if probe.with_suffix(".wav").exists() else "none"


def _asterisk_audio(name: str) -> np.ndarray | None:
    g722_path = ASTERISK_SOUNDS / f"{name}.g722"
    G722 = g722_module() if g722_path.exists() else None
    if G722 is not None:
        pcm = G722.G722(RATE, 64000).decode(g722_path.read_bytes())
        return np.asarray(pcm, dtype=np.float32)
    wav_path = ASTERISK_SOUNDS / f"{name}.wav"
    if wav_path.exists():
        audio, rate = _read_wav(wav_path)
        return _to_16k(audio, rate)
    return None


@lru_cache(maxsize=4)
def asterisk(min_s: float = 1.5, max_s: float = 9.0) -> tuple[Utterance, ...]:
    """Asterisk's English prompts that are plain speech and min_s..max_s long, sorted by name."""
    if not ASTERISK_TEXT.exists():
        return ()
    out = []
    for name, text in sorted(_asterisk_texts().items()):
        if not text or _NOT_SPEECH.search(text) or len(text.split()) < 2:
            continue
        audio = _asterisk_audio(name)
        if audio is None or not min_s <= len(audio) / RATE <= max_s:
            continue
        out.append(Utterance(f"asterisk/{name}", text, audio, "allison", "asterisk-core-sounds-en"))
    return tuple(out)


def real_speech(n_asterisk: int = 15, seed: int = 0, min_s: float = 1.5, max_s: float = 9.0) -> list[Utterance]:
    """A fixed, mixed set: every pocketsphinx-testdata clip plus `n_asterisk` Asterisk prompts
    drawn with `seed` (several speakers; the same list every time for the same arguments)."""
    prompts = list(asterisk(min_s, max_s))
    rng = np.random.default_rng(seed)
    picked = [prompts[i] for i in sorted(rng.choice(len(prompts), min(n_asterisk, len(prompts)), replace=False))]
    return pocketsphinx() + picked


def music_tracks() -> list[tuple[str, np.ndarray]]:
    """The Asterisk music-on-hold tracks (real recorded music), 16 kHz."""
    out = []
    for path in sorted(ASTERISK_MOH.glob("*.wav")):
        audio, rate = _read_wav(path)
        out.append((path.stem, _to_16k(audio, rate)))
    return out


def missing_packages() -> list[str]:
    """Which of the corpus's Debian packages are not installed (by the files they provide)."""
    probes = {
        "pocketsphinx-testdata": PS_DATA / "librivox",
        "asterisk-core-sounds-en": ASTERISK_TEXT,
        "asterisk-core-sounds-en-wav": ASTERISK_SOUNDS / "auth-thankyou.wav",
        "asterisk-core-sounds-en-g722": ASTERISK_SOUNDS / "auth-thankyou.g722",
        "asterisk-moh-opsound-wav": ASTERISK_MOH,
    }
    return [pkg for pkg, path in probes.items() if not path.exists()]


if __name__ == "__main__":
    clips = real_speech()
    print(f"{len(asterisk())} usable Asterisk prompts; missing packages: {missing_packages() or 'none'}")
    for u in clips:
        print(f"{u.name:55s} {u.duration_s:5.1f} s  {u.speaker:16s} {u.text}")
    for name, x in music_tracks():
        print(f"music {name}: {len(x) / RATE:.0f} s")
