"""Checks that keep greedy Whisper from inventing text.

Whisper, given silence or noise, happily writes "Thank you." or loops on a
phrase until its context is full. These checks bound and veto its output.
"""

from __future__ import annotations

import math
import zlib

from voxnode.text import is_cjk, is_hangul, words

# Fast speech is about 4-5 BPE tokens per second; allow headroom plus a few
# tokens for punctuation, but never so many that a loop runs for seconds.
TOKENS_PER_SECOND = 6.0
TOKEN_MARGIN = 8
MAX_NEW_TOKENS = 220  # Whisper samples at most n_text_ctx // 2 = 224 tokens

# Whisper's own defaults (openai-whisper transcribe()).
NO_SPEECH_THRESHOLD = 0.6
LOGPROB_THRESHOLD = -1.0
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


def is_no_speech(no_speech_prob: float, avg_logprob: float, threshold: float | None = None) -> bool:
    """Whisper's rule: the model says "no speech" (above `threshold`, default NO_SPEECH_THRESHOLD)
    and is unsure of what it wrote."""
    limit = NO_SPEECH_THRESHOLD if threshold is None else threshold
    return no_speech_prob > limit and avg_logprob < LOGPROB_THRESHOLD


def is_noise(no_speech_prob: float, avg_logprob: float, no_speech_threshold: float, min_confidence: float) -> bool:
    """What the daemon does not publish as speech (microphone finals and partials, Wyoming
    transcripts): text it is very unsure of (`stream.min_confidence`), or Whisper's rule with the
    configured no-speech threshold: the model says "no speech" *and* is unsure of what it wrote.
    The no-speech probability alone is not enough: under babble, correct sentences decoded with
    mean log-probability -0.17 to -0.47 had 0.62-0.68 (three of them dropped in one live run).
    """
    return avg_logprob < min_confidence or is_no_speech(no_speech_prob, avg_logprob, no_speech_threshold)


def is_too_repetitive(text: str) -> bool:
    return compression_ratio(text) > COMPRESSION_RATIO_THRESHOLD
