"""The noise verdict: what voxnode does not publish as speech (microphone finals and partials, Wyoming
transcripts), from a `TranscriptResult`'s engine-neutral figures.

A backend that has no no-speech probability (`Capabilities.no_speech` False) reports 0, and the
confidence alone decides.
"""

from __future__ import annotations

# openai-whisper's defaults (transcribe()): a "no speech" verdict counts only when the text is unsure too.
NO_SPEECH_THRESHOLD = 0.6
LOGPROB_THRESHOLD = -1.0


def is_no_speech(no_speech_prob: float, avg_logprob: float, threshold: float | None = None) -> bool:
    """Whisper's rule: the model says "no speech" (above `threshold`, default NO_SPEECH_THRESHOLD)
    and is unsure of what it wrote."""
    limit = NO_SPEECH_THRESHOLD if threshold is None else threshold
    return no_speech_prob > limit and avg_logprob < LOGPROB_THRESHOLD


def is_noise(no_speech_prob: float, avg_logprob: float, no_speech_threshold: float, min_confidence: float) -> bool:
    """Text it is very unsure of (`stream.min_confidence`), or Whisper's rule with the configured
    no-speech threshold: the model says "no speech" *and* is unsure of what it wrote. The no-speech
    probability alone is not enough: under babble, correct sentences decoded with mean
    log-probability -0.17 to -0.47 had 0.62-0.68 (three of them dropped in one live run).
    """
    return avg_logprob < min_confidence or is_no_speech(no_speech_prob, avg_logprob, no_speech_threshold)
