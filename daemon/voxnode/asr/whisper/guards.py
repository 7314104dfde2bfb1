"""Checks that keep greedy Whisper from inventing text.

Whisper, given silence or noise, happily writes "Thank you." or loops on a
phrase until its context is full. These checks bound and veto its output.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable

import numpy as np

from voxnode.text import is_cjk, is_hangul, words

# Fast speech is about 4-5 BPE tokens per second; allow headroom plus a few
# tokens for punctuation, but never so many that a loop runs for seconds.
TOKENS_PER_SECOND = 6.0
TOKEN_MARGIN = 8
MAX_NEW_TOKENS = 220  # Whisper samples at most n_text_ctx // 2 = 224 tokens

# Whisper's own default (openai-whisper transcribe()); its no-speech rule is in asr/noise.py.
COMPRESSION_RATIO_THRESHOLD = 2.4

# A window whose loudest sample is below this (-60 dBFS) carries nothing to
# transcribe; skipping it saves a full encoder pass on digital silence.
SILENCE_PEAK = 1e-3


def max_new_tokens(duration_s: float) -> int:
    return min(MAX_NEW_TOKENS, int(math.ceil(duration_s * TOKENS_PER_SECOND)) + TOKEN_MARGIN)


def repeated_tail(tokens: list[int]) -> int:
    """Length of the tail to drop if it repeats the n-gram before it too often, else 0.

    An n-gram repeated r times in a row counts as a loop when r >= 3 and the
    repeats cover at least 12 tokens ("no, no, no" is speech; the same clause
    three times, or one word twelve times, is a decoding loop).
    """
    for n in range(1, len(tokens) // 3 + 1):
        gram = tokens[-n:]
        repeats = 1
        while len(tokens) >= n * (repeats + 1) and tokens[-n * (repeats + 1) : len(tokens) - n * repeats] == gram:
            repeats += 1
        if repeats >= 3 and n * repeats >= 12:
            return n * (repeats - 1)
    return 0


def repeated_phrase(text: str) -> bool:
    """The transcript ends with a phrase of 3+ words said twice, or a word 4+ times in a row
    (words compared without case, punctuation or the spaces between them).

    In windows much longer than the speech, tiny.en often ends "Press 6 to play the next
    message. Press 6 to play the next message." or "5 5 5 5 5 5" (measured on the Asterisk
    prompts at a 6 s window: 4 of 100). Such text is worth a second look in a longer window,
    which keeps a real repetition and drops a loop; it is not dropped on this rule alone.
    The spaces go because a loop may re-spell a compound: live under babble (20 dB), 2.3 s of
    "Press zero for mailbox options." came back as "Press zero for mailbox options. Press zero for
    mail box options. Press zero for mailbox options." and was published so.

    Words are voxnode.text.words: in Chinese and Japanese, which put no spaces between words, each
    character counts, and a phrase must then have 4+ of them ("打开厨房的灯。打开厨房的灯。").
    """
    units = words(text)
    cjk = any(is_cjk(u[0]) for u in units)
    min_phrase = 4 if cjk else 3
    joined = "".join(units)
    for n in range(1, len(units)):  # the last copy may have more words than the one before it
        gram = "".join(units[-n:])
        size, repeats = len(gram), 1
        while joined[: len(joined) - size * repeats].endswith(gram):
            repeats += 1
        if (n >= min_phrase and repeats >= 2) or repeats >= 4:
            return True
    return False


# Whole-utterance repeats ("Set bedroom light green. Set bedroom light green." for one command).
# After a short command in a mostly empty window tiny.en may go on, say it again, then end: live
# (scripts/bench/probe_repeats.py: 2 x 65 short real commands, one per pause, no prompt or one of 2
# domain prompts) 12 finals of 392 clean and 11 of 367 in babble (10 dB) were a command twice or
# three times; offline, 1 clip of 251 ("Login incorrect." -> "Login Incorrect. Login Incorrect.").
# A final that is a whole repeat is decoded again in the longer window (redecode.looped); what is
# still a repeat and holds more than its speech could is cut to one copy (redecode.collapse).
# Measured on the 251 real clips (pocketsphinx-testdata, the Asterisk prompts of 0.5-9 s; their
# offline transcripts over speech_span_s), letters per second (spoken_letters): median 12.4, p99
# 17.0, max 17.9 ("The conference will begin when the leader arrives.", 2.3 s); the doubled
# commands 22-34, except "I'm sorry. I'm sorry." (17, 0.8 s: left to the retry). Tokens separate
# worse: real speech up to 5.0 per second, "Message deleted. Message deleted." only 4.8.
# Only a repeat over the limit is cut, so "no, no, no", or a command a user really says twice
# (at most ~18 letters per second, as any speech), stays as said.
MAX_LETTERS_PER_SECOND = 19.0
DIGIT_LETTERS = 3  # "5" is said "five": a digit counts as 3 letters
CJK_LETTERS = 3  # a Chinese or Japanese character is a syllable (not measured: no such corpus here)
SPAN_BELOW_PEAK_DB = 35.0  # speech_span_s: frames within 35 dB of the loudest (audio_corpus.label_speech)
SPAN_FLOOR_DBFS = -60.0
SPAN_FRAME = 320  # 20 ms at 16 kHz


def repeat_unit(text: str) -> tuple[int, int]:
    """(n, k): the words of `text` are k copies of its first n words (compared without case,
    punctuation or spaces, as repeated_phrase); (len(words), 1) when they are not a repeat."""
    units = words(text)
    joined = "".join(units)
    for n in range(1, len(units) // 2 + 1):
        gram = "".join(units[:n])
        if gram and len(joined) % len(gram) == 0 and joined == gram * (len(joined) // len(gram)):
            return n, len(joined) // len(gram)
    return len(units), 1


def is_repeated_utterance(text: str) -> bool:
    """The whole text is one phrase of 2+ words said 2+ times, or one word 3+ times
    ("five five" is not; "five, five, five" and "Call forwarding. Call forwarding." are)."""
    n, k = repeat_unit(text)
    return (k >= 2 and n >= 2) or k >= 3


def spoken_letters(text: str) -> int:
    """Letters of `text` as said: a digit counts DIGIT_LETTERS, a Chinese or Japanese character CJK_LETTERS."""
    return sum(CJK_LETTERS if is_cjk(ch) else DIGIT_LETTERS if ch.isdigit() else 1 for ch in text if ch.isalnum())


def speech_span_s(audio: np.ndarray, rate: int = 16000) -> float:
    """Seconds from the first to the last 20 ms frame within SPAN_BELOW_PEAK_DB of the loudest
    (its 99th percentile) and above SPAN_FLOOR_DBFS; `audio` in [-1, 1]. Noise makes the span
    longer, never shorter, so it can only make too_fast() less likely."""
    n = len(audio) // SPAN_FRAME
    if n == 0:
        return len(audio) / rate
    frames = np.asarray(audio[: n * SPAN_FRAME], np.float64).reshape(n, SPAN_FRAME)
    level = 10 * np.log10(np.mean(frames * frames, axis=1) + 1e-12)
    loud = np.nonzero(level > max(float(np.percentile(level, 99)) - SPAN_BELOW_PEAK_DB, SPAN_FLOOR_DBFS))[0]
    if len(loud) == 0:
        return len(audio) / rate
    return (int(loud[-1]) + 1 - int(loud[0])) * SPAN_FRAME / rate


def too_fast(text: str, span_s: float) -> bool:
    """More letters than speech of `span_s` seconds holds (MAX_LETTERS_PER_SECOND)."""
    return spoken_letters(text) > MAX_LETTERS_PER_SECOND * max(span_s, 0.1)


def first_copy(tokens: list[int], decode: Callable[[list[int]], str]) -> int:
    """How many of `tokens` make the first copy of a repeated utterance, with the punctuation
    that ends it; len(tokens) when the text is not a repeat."""
    text = decode(tokens)
    n, k = repeat_unit(text)
    if k < 2:
        return len(tokens)
    gram = "".join(words(text)[:n])
    for m in range(1, len(tokens) + 1):
        if "".join(words(decode(tokens[:m]))) == gram:
            while m < len(tokens) and not any(ch.isalnum() for ch in decode(tokens[m : m + 1])):
                m += 1  # the closing mark and spaces of the first copy
            return m
    return len(tokens)


def compression_ratio(text: str) -> float:
    """Whisper's compression ratio (bytes / zlib-compressed bytes), with one byte per letter.

    Whisper computes it on UTF-8 bytes: right for English, and for Chinese and Japanese, whose
    3-byte characters are about a word each, but not for alphabets of 2-3 bytes a letter
    (Cyrillic, Greek, Arabic, Hebrew, Devanagari, ...): their repeated lead bytes compress, so
    ordinary text reads as a loop. A real Asterisk prompt (vm-msginstruct, 5 sentences: "Для
    прослушивания следующего сообщения нажмите 6. Для повторного прослушивания сообщения нажмите
    5. ...", 18 s, which base transcribes word for word) is 2.53 in UTF-8, over the 2.4 cut-off:
    the text was dropped as "repetitive".
    Here each letter of such an alphabet counts as one byte (one code per distinct letter, the
    first 128 of them): that prompt gives 1.87, its English version ("To hear the next message
    press 6, to repeat this message press 5, ...") 1.69.
    """
    if not text:
        return 0.0
    data = text.encode("utf-8") if text.isascii() else _one_byte_letters(text)
    return len(data) / len(zlib.compress(data))


def _one_byte_letters(text: str) -> bytes:
    codes: dict[str, bytes] = {}
    out = bytearray()
    for ch in text:
        if ch.isascii() or is_cjk(ch) or is_hangul(ch):
            out += ch.encode("utf-8")
            continue
        code = codes.get(ch)
        if code is None:
            code = bytes([0x80 + len(codes)]) if len(codes) < 128 else ch.encode("utf-8")
            codes[ch] = code
        out += code
    return bytes(out)


def is_too_repetitive(text: str) -> bool:
    return compression_ratio(text) > COMPRESSION_RATIO_THRESHOLD
