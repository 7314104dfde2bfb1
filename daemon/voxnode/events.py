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

    def as_dict(self) -> dict:
        return {
            "type": self.type,
            "stream": self.stream,
            "id": self.id,
            "text": self.text,
            "start": iso8601(self.start),
            "end": iso8601(self.end),
            "latency_ms": round(self.latency_ms, 1),
            "confidence": round(self.confidence, 4),
        }
