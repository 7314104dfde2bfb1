"""What of a decode is published as speech: the one text clean-up and noise verdict for the
microphones' partials and finals (stream/transcripts.py) and Wyoming's transcripts (wyoming_stt/).

The text is Whisper's with its non-speech annotations stripped and spaces normalised
(voxnode.text.clean_text); the verdict is asr/noise.is_noise with `[stream] no_speech_threshold`
and `min_confidence`. Built from config by stream/params.py `speech_text`.
"""

from __future__ import annotations

from dataclasses import dataclass

from voxnode.asr import noise
from voxnode.asr.recognizer import TranscriptResult
from voxnode.text import clean_text


@dataclass(frozen=True)
class SpeechText:
    no_speech_threshold: float  # stream.no_speech_threshold
    min_confidence: float  # stream.min_confidence: mean token log-prob; below: treated as noise

    def is_noise(self, result: TranscriptResult) -> bool:
        """Noise, music or nothing: nothing is said to have been said."""
        return noise.is_noise(result.no_speech_prob, result.confidence, self.no_speech_threshold, self.min_confidence)

    def of(self, result: TranscriptResult) -> str:
        """The result's text as published; "" when nothing was said (only annotations, or noise)."""
        text = clean_text(result.text)
        return "" if not text or self.is_noise(result) else text
