"""What the pipeline produces and the outputs (stdout, the log, MQTT, ...) publish: typed events from
end to end; `as_dict` and `dumps` make them JSON at the edges (a line on stdout, an MQTT payload)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime

from voxnode.audio.levels import LevelReport


def dumps(obj: dict) -> bytes:
    """An event (or any JSON-able dict) as compact UTF-8 JSON: the edge where dicts become bytes."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


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
    # A final's speech over the room's noise floor in the speech band, dB (stream/speech_levels.py; under
    # ~10 dB Whisper loses many words); None (absent): a partial, an utterance too short to tell, or a
    # stream without a noise floor (`vad.noise_gate = false`).
    speech_snr_db: float | None = None
    # Set by the spool's journal (voxnode.delivery) when it stores a final: its durable number (None:
    # the spool could not store it) and the model that decoded it. `recorded`: it went through the
    # journal, so `seq` (maybe null) and `model` are shown.
    seq: int | None = None
    model: str = ""
    recorded: bool = False

    @property
    def is_final(self) -> bool:
        return self.type == "final"

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
        if self.speech_snr_db is not None:
            d["speech_snr_db"] = self.speech_snr_db
        if self.wake_word is not None:
            d["wake_word"] = self.wake_word
        if self.follow_up is not None:
            d["follow_up"] = self.follow_up
        if self.recorded:
            d["seq"] = self.seq
            d["model"] = self.model
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


# Everything an output's `handle` receives.
Event = TranscriptEvent | WakeEvent | LevelReport
