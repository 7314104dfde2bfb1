"""Words in any script, for the checks and the partials that compare transcripts word by word.

Splitting on spaces and matching `\\w` works for English, but not for every language Whisper base
writes: Chinese and Japanese put no spaces between words (a whole sentence would be one "word"),
and `\\w` leaves out combining marks (Devanagari vowel signs and viramas, Arabic harakat), so
"नमस्ते" splits in three and "काम" ("work") compares equal to "कम" ("less"). Here a Chinese or
Japanese character is a word of its own, and marks belong to the letter they sit on.
"""

from __future__ import annotations

import re
import unicodedata

# Scripts written without spaces between words: Han (CJK ideographs, extensions A and beyond, the
# compatibility block), Hiragana and Katakana, CJK symbols and punctuation ("。", "、", "「"),
# full-width and half-width forms ("！", "？", "ｶ").
_CJK_RANGES = (
    (0x3000, 0x30FF),
    (0x31F0, 0x31FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0xFF00, 0xFFEF),
    (0x20000, 0x2FA1F),
)
_CJK_FIRST = min(lo for lo, _ in _CJK_RANGES)


def is_cjk(ch: str) -> bool:
    o = ord(ch)
    # Below every range (Latin, Cyrillic, ... letters) without the loop: words() asks for each
    # character of each final's text, several times (55 -> 13 us for an 84-letter text).
    return o >= _CJK_FIRST and any(lo <= o <= hi for lo, hi in _CJK_RANGES)


def is_hangul(ch: str) -> bool:
    """A Korean syllable block (written with spaces between words, like English)."""
    return 0xAC00 <= ord(ch) <= 0xD7AF


def is_word_char(ch: str) -> bool:
    """A letter or digit of any script, a combining mark, or the apostrophe."""
    return ch.isalnum() or ch == "'" or unicodedata.category(ch)[0] == "M"


def words(text: str) -> list[str]:
    """The words of `text`, lower case, without punctuation; each Chinese or Japanese character
    is a word of its own."""
    out: list[str] = []
    current: list[str] = []
    for ch in text.lower():
        if is_cjk(ch) and ch.isalnum():
            if current:
                out.append("".join(current))
                current = []
            out.append(ch)
        elif is_word_char(ch) and (current or not is_cjk(ch)):
            current.append(ch)
        elif current:
            out.append("".join(current))
            current = []
    if current:
        out.append("".join(current))
    return out


def units(text: str) -> list[str]:
    """`text` cut into display words, as written (case and punctuation kept): at spaces, and
    before each Chinese or Japanese character and any word that follows one without a space
    ("我用iPhone。" -> "我", "用", "iPhone。"). `join(units(t))` gives `t` back, spaces normalised."""
    out: list[str] = []
    for token in text.split():
        current = ""
        for ch in token:
            starts = is_cjk(ch) and ch.isalnum()
            after_cjk = bool(current) and is_cjk(current[-1]) and ch.isalnum() and not is_cjk(ch)
            if current and (starts or after_cjk):
                out.append(current)
                current = ""
            current += ch
        if current:
            out.append(current)
    return out


def glue(left: str, right: str) -> str:
    """What goes between two display words: nothing where either side is Chinese or Japanese."""
    if left and right and (is_cjk(left[-1]) or is_cjk(right[0])):
        return ""
    return " "


def join(parts: list[str]) -> str:
    """Display words back into text (no spaces inside Chinese or Japanese)."""
    if not parts:
        return ""
    out = [parts[0]]
    for prev, part in zip(parts, parts[1:], strict=False):
        out.append(glue(prev, part) + part)
    return "".join(out)


def key(word: str) -> str:
    """Comparison key of a word: case and punctuation do not make two words differ (marks do)."""
    return "".join(ch for ch in word.lower() if is_word_char(ch))


# Whisper's non-speech annotations ("[BLANK_AUDIO]", "(music)", "*laughs*", "♪"), with the
# full-width brackets it uses in Chinese and Japanese ("（笑）", "【音楽】").
_NON_SPEECH = re.compile(r"\[[^\]]*\]|\([^)]*\)|\*[^*]*\*|♪|（[^）]*）|【[^】]*】|［[^］]*］")


def clean_text(text: str) -> str:
    """A transcript as published (live finals and partials, Wyoming): Whisper's
    non-speech annotations stripped, spaces normalised; where one sat between Chinese or Japanese
    characters, no space is left in its place."""
    out = ""
    for part in _NON_SPEECH.split(text):
        part = " ".join(part.split())
        if part:
            out = out + glue(out, part) + part if out else part
    return out
