"""What the pipeline produces and the sinks (stdout, MQTT) publish."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime


def iso8601(t_wall: float) -> str:
    """Wall-clock seconds -> ISO 8601 with milliseconds and a UTC offset."""
    return datetime.fromtimestamp(t_wall, UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class TranscriptEvent:
    type: str  # "partial" | "final"
    stream: str
    id: str  # utterance id; a partial and its final share it
    text: str
    start: float  # wall clock, first sample of the utterance
    end: float  # wall clock, end of speech
    latency_ms: float  # end of speech -> this event ready
    confidence: float  # mean token log-probability
    wake_word: str | None = None  # the wake word that opened the utterance ([wake]); else absent
    # With a wake word: whether the utterance was heard in a follow-up window (wake.follow_up_s)
    # rather than right after the word (wake_word then names the word that opened the conversation).
    follow_up: bool | None = None
    # The language the text was decoded as, a Whisper (ISO 639-1) code: `[asr] language`, or the one
    # detected where that is "auto"; "" (the key absent) only where the engine did not say.
    language: str = ""

    def as_dict(self) -> dict:
        d = {
            "type": self.type,
            "stream": self.stream,
            "id": self.id,
            "text": self.text,
            "start": iso8601(self.start),
            "end": iso8601(self.end),
            "latency_ms": round(self.latency_ms, 1),
            "confidence": round(self.confidence, 4),
        }
        if self.language:
            d["language"] = self.language
        if self.wake_word is not None:
            d["wake_word"] = self.wake_word
        if self.follow_up is not None:
            d["follow_up"] = self.follow_up
        return d


@dataclass(frozen=True)
class WakeEvent:
    """A wake word opened a stream's gate: what follows, up to the endpoint, is transcribed."""

    stream: str
    wake_word: str  # the model's name ("okay_nabu"); finals it opens carry the same
    phrase: str  # what is said ("Okay Nabu")
    probability: float  # the averaged detector probability that crossed the cutoff
    time: float  # wall clock, the frame in which the word was detected

    def as_dict(self) -> dict:
        return {
            "type": "wake",
            "stream": self.stream,
            "wake_word": self.wake_word,
            "phrase": self.phrase,
            "probability": round(self.probability, 4),
            "time": iso8601(self.time),
        }
