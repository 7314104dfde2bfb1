"""`wake.confirm = "whisper"` (and "auto" for alexa): the recogniser hears the wake word before it counts.

microWakeWord fires on words that sound like its word: over 11 hours of full-band speech, TV and music,
alexa at its 0.95 cutoff fired 26 times ("We're sorry", "left brace", "Hold time": 2.4 per hour). Whisper,
which the node loads anyway, writes those words as they are. So a detection of a word checked here opens
the gate provisionally: the audio from LEAD_S before it to TAIL_S after goes to the stream's recogniser
(greedy, with the model's phrase as a hotword, ahead of every other decode), and the word counts only if
the text has it (`heard`). Until then nothing after the word is transcribed; it is held, not lost, and
follows at once when the word is confirmed.

Measured (scripts/bench/wake_whisper.py, tiny.en; issue 24, stop 52; docs/benchmarks.md "Whisper hears
the word"): the 165 real "alexa" recordings in pink, babble, HVAC and music noise over five draws of the
noise, and the bench's 11 wideband hours (4 of them never used to choose a setting). microWakeWord at CUTOFF
0.5, then Whisper with the hotword: 96.1 % heard at 10 dB SNR and 92.3 % at 5 dB with 1 false accept in 11
hours (0.09 per hour), against 93.0 / 85.8 % and 26 (2.4 per hour) for the detector alone at 0.95. Without
the hotword Whisper writes "Flexer", "The left side" or "like some" for 8 % of the real words (89.0 % heard
at 10 dB); with it, one of the 168 false detections ("I'm sorry", scored 0.52) became "Alexa".

Each check is one greedy decode of ~2.1 s (57 ms of CPU on the x86 here), 15 times an hour over speech and
TV, none over music; the Wake word event comes when it is done, TAIL_S + the decode after the detection.
"""

from __future__ import annotations

from dataclasses import replace
from difflib import SequenceMatcher

from voxnode.text import words

from .models import WakeModel

# The words whose detections "auto" has Whisper check: those measured (above). Others only where the
# user sets confirm = "whisper" (their real recordings are too few to set a default on).
WORDS = ("alexa",)
# microWakeWord's cutoff for a word in WORDS that Whisper checks (unless wake.threshold is set): its
# detections are checked, so it may fire more readily than alone (0.95). 0.7 heard 95.8 / 91.0 % with the
# same false accept for 9 checks an hour instead of 15.
CUTOFF = 0.5
LEAD_S = 2.0  # audio before the detection the check hears (the word ends ~0.1-0.2 s before it fires)
TAIL_S = 0.1  # ... and after it: the word's end (0.3 s heard the same: 96.4 / 91.8 % at 10 / 5 dB against 96.2 / 92.4)
# A word of the text within this difflib ratio of the phrase's last word counts (0.8: one letter of five
# changed or missing: "Alexa", "Alexa's", "Lexa", "Alex"; not "Alexis", "Lexus"); two words joined ("Alex a") too.
MATCH_RATIO = 0.8
# A check not answered in this long (an engine busy with long Wyoming requests, say) lets the word count:
# a command is never lost to a busy engine; the health counts it (`wakes_unchecked`).
MAX_WAIT_S = 3.0


def checked_models(confirm: str, models: tuple[WakeModel, ...]) -> frozenset[str]:
    """The names of `models` whose detections Whisper checks under wake.confirm = `confirm`."""
    if confirm == "whisper":
        return frozenset(m.name for m in models)
    if confirm == "auto":
        return frozenset(m.name for m in models if m.name in WORDS)
    return frozenset()


def hotwords(model: WakeModel) -> tuple[str, ...]:
    """What the check's decode is biased towards: the model's phrase ("Alexa", "Okay Nabu")."""
    return (model.phrase,)


def heard(text: str, model: WakeModel) -> bool:
    """Whether Whisper's `text` has the model's word: its phrase's last word ("alexa", "nabu", "jarvis",
    "mycroft"; the one that tells the phrases apart) as a word of the text, or two of its words joined,
    within MATCH_RATIO."""
    target = words(model.phrase)[-1]
    said = words(text)
    candidates = said + [a + b for a, b in zip(said, said[1:], strict=False)]
    return any(SequenceMatcher(None, w, target).ratio() >= MATCH_RATIO for w in candidates)


def with_cutoff(models: tuple[WakeModel, ...], checked: frozenset[str], threshold: float) -> tuple[WakeModel, ...]:
    """The models as they run with Whisper's check: the measured words (WORDS) that it checks at CUTOFF,
    unless the user chose a cutoff (wake.threshold > 0); every other model at its own."""
    if threshold > 0:
        return models
    return tuple(replace(m, cutoff=CUTOFF) if m.name in checked and m.name in WORDS else m for m in models)
