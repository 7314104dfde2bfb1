"""Real recorded speech in languages other than English, from Debian's Asterisk prompt packages.

| package (+ -g722, -wav) | language | voice (folder) | prompts | licence |
|---|---|---|---|---|
| asterisk-core-sounds-fr | Canadian French | June (fr_CA_f_June) | ~520 | CC-BY-SA-3.0 |
| asterisk-core-sounds-es | Mexican Spanish | Allison (es_MX_f_Allison) | ~490 | CC-BY-SA-3.0 |
| asterisk-core-sounds-it | Italian | Carlo (it_IT_m_Carlo) | ~600 | CC-BY-SA-3.0 |
| asterisk-core-sounds-ru | Russian | IvrvoiceRU (ru_RU_f_IvrvoiceRU) | ~570 | CC-BY-SA-3.0 |

Each package's transcript is /usr/share/doc/asterisk-core-sounds-XX/core-sounds-XX.txt.gz
("name: text" lines), as for English (scripts/bench/speech_corpus.py, whose rules this follows): only
plain speech is kept (no key names, tones, stage directions, fragments, acronyms), at least two
words, no digits in the reference (a spoken number may be written either way), 1.5-9 s long; then
a fixed draw of `n` prompts per language (seed 0). The wideband G.722 files are used where the
`g722` package can decode them (benchmark venv), else the 8 kHz WAV resampled to 16 kHz.

Known slips of the references: the Spanish transcript is written without accents or "ñ"
("numero", "contrasena"), so Spanish is scored with diacritics removed on both sides
(scripts/bench/languages.py); Russian "ё" is written "е" in some lines and not others.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import numpy as np

from scripts.bench.speech_corpus import RATE, Utterance, _read_wav, _to_16k, g722_module

SOUNDS = Path("/usr/share/asterisk/sounds")
DOCS = Path("/usr/share/doc")
# Whisper code -> (Debian package suffix, sounds folder, speaker)
LANGUAGES = {
    "fr": ("fr", "fr_CA_f_June", "june"),
    "es": ("es", "es_MX_f_Allison", "allison-es"),
    "it": ("it", "it_IT_m_Carlo", "carlo"),
    "ru": ("ru", "ru_RU_f_IvrvoiceRU", "ivrvoice-ru"),
}
# What `make bench-languages` installs (scripts/apt-ensure).
APT_PACKAGES = tuple(f"asterisk-core-sounds-{s}{v}" for s, _, _ in LANGUAGES.values() for v in ("", "-g722", "-wav"))

# As speech_corpus's rules, plus: digits; any ".." (the fragments here are cut "..." or ".."); a "?"
# before the end of the text (the Italian transcript has "?" for lost letters: "sar?", "pu?", "cos?").
_NOT_SPEECH = re.compile(r"[\[\]()*#@/<>=\d]|\.\.|www\.|\b[A-Z]{2,}\b|\?(?!\W*$)")


def text_path(language: str) -> Path:
    suffix = LANGUAGES[language][0]
    return DOCS / f"asterisk-core-sounds-{suffix}" / f"core-sounds-{suffix}.txt.gz"


def sounds_dir(language: str) -> Path:
    return SOUNDS / LANGUAGES[language][1]


def texts(language: str) -> dict[str, str]:
    """The package's transcript: prompt name -> text."""
    out = {}
    with gzip.open(text_path(language), "rt", encoding="utf-8-sig", errors="replace") as f:
        for line in f:
            if line.startswith(";") or ":" not in line:
                continue
            name, text = line.split(":", 1)
            out[name.strip()] = " ".join(text.split())
    return out


def audio(language: str, name: str) -> np.ndarray | None:
    """A prompt's audio, 16 kHz float32 in int16 scale (G.722 where it can be decoded)."""
    base = sounds_dir(language) / name
    g722_path = base.with_name(base.name + ".g722")
    G722 = g722_module() if g722_path.exists() else None
    if G722 is not None:
        return np.asarray(G722.G722(RATE, 64000).decode(g722_path.read_bytes()), dtype=np.float32)
    wav_path = base.with_name(base.name + ".wav")
    if wav_path.exists():
        x, rate = _read_wav(wav_path)
        return _to_16k(x, rate)
    return None


def is_plain_speech(text: str) -> bool:
    return bool(text) and not _NOT_SPEECH.search(text) and len(text.split()) >= 2


def prompts(language: str, min_s: float = 1.5, max_s: float = 9.0) -> list[Utterance]:
    """Every plain-speech prompt of `language` min_s..max_s long, sorted by name."""
    if not text_path(language).exists():
        return []
    speaker = LANGUAGES[language][2]
    out = []
    for name, text in sorted(texts(language).items()):
        if not is_plain_speech(text):
            continue
        x = audio(language, name)
        if x is None or not min_s <= len(x) / RATE <= max_s:
            continue
        out.append(Utterance(f"asterisk-{language}/{name}", text, x, speaker, f"asterisk-core-sounds-{language}"))
    return out


def corpus(language: str, n: int = 40, seed: int = 0) -> list[Utterance]:
    """A fixed draw of `n` prompts of `language` (the same list every time for the same arguments)."""
    pool = prompts(language)
    rng = np.random.default_rng(seed)
    return [pool[i] for i in sorted(rng.choice(len(pool), min(n, len(pool)), replace=False))]


def missing_packages() -> list[str]:
    out = []
    for lang, (suffix, _, _) in LANGUAGES.items():
        probes = {
            f"asterisk-core-sounds-{suffix}": text_path(lang),
            f"asterisk-core-sounds-{suffix}-wav": sounds_dir(lang) / "auth-thankyou.wav",
            f"asterisk-core-sounds-{suffix}-g722": sounds_dir(lang) / "auth-thankyou.g722",
        }
        out += [pkg for pkg, path in probes.items() if not path.exists()]
    return out


if __name__ == "__main__":
    print(f"missing packages: {missing_packages() or 'none'}")
    for lang in LANGUAGES:
        clips = corpus(lang)
        print(f"{lang}: {len(prompts(lang))} usable prompts, {len(clips)} drawn")
        for u in clips[:5]:
            print(f"  {u.name:45s} {u.duration_s:4.1f} s  {u.text}")
