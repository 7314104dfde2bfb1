"""The encoder's window: how many seconds of audio (the utterance, zero-padded) one encoder pass hears.

Whisper saw speech followed by zero padding in training; a second of it lets the model hear the end
of the last word. In short windows decoding sometimes misses the end-of-text token or says the
utterance again ("10 of clubs 10 of clubs ..."): below 6 s that happened often on
pocketsphinx-testdata, at 10 s never. So finals encode at least `[asr] min_window_s` (6 s) and a
final that loops is decoded again in a longer window (asr/whisper/redecode.py says when). Windows
are whole seconds so the interpreters are resized for a handful of shapes only.
"""

from __future__ import annotations

import math

MAX_SECONDS = 30.0  # Whisper's own window: the longest audio one call takes
PAD_SECONDS = 1.0
MIN_WINDOW_SECONDS = 6.0
PARTIAL_WINDOW_SECONDS = MIN_WINDOW_SECONDS
# The retry's window: at least 10 s and 4 s longer than the one that looped. It was twice the window
# (12 s after 6 s, 18 s after 9 s). As the first window 10 s looped in 0 of 100 finals with a draft (the 50
# real utterances of speech_corpus.real_speech, clean and pink 10 dB, the draft from a partial 1.2 s before
# the end, as on a Pi 4; 6 s: 8); as the retry it gave the same WER as 12 s (clean / pink 10 dB / babble
# 10 dB: 4.6 / 7.7 / 22.8 %, 8 of 150 finals retried) at 5-25 % less CPU per retried final (7.6 s of
# speech: 246 -> 186 ms), stop 39.
RETRY_WINDOW_SECONDS = 10.0
RETRY_EXTRA_SECONDS = 4.0


def first_window(duration_s: float, min_window_s: float = MIN_WINDOW_SECONDS) -> float:
    """The window an utterance of `duration_s` is first encoded in: its audio and PAD_SECONDS, in whole
    seconds, at least `min_window_s`, at most MAX_SECONDS."""
    return min(MAX_SECONDS, max(min_window_s, math.ceil(duration_s + PAD_SECONDS)))


def retry_window(window: float) -> float:
    """The longer window a looped final is decoded again in."""
    return min(MAX_SECONDS, max(RETRY_WINDOW_SECONDS, window + RETRY_EXTRA_SECONDS))
