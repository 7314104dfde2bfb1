"""A stream's counters, reported in its health section and behind the Prometheus metrics."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class PipelineStats:
    frames: int = 0
    utterances: int = 0
    discarded: int = 0
    finals: int = 0
    partials: int = 0
    suppressed: int = 0  # decoded, but no speech in it (noise, music, hallucination)
    finals_lost: int = 0  # dropped by the scheduler or failed in the engine
    speculative_hits: int = 0
    endpoints_sentence_end: int = 0  # pauses the speculative decode judged a finished sentence
    endpoints_open: int = 0  # ... an unfinished one (waited the long hangover)
    endpoints_by_turn: int = 0  # of endpoints_sentence_end: the end-of-turn model's call (no sure mark)
    endpoints_agreed: int = 0  # of endpoints_sentence_end: a sure mark and the model agreed (the shortest hangover)
    wakes: int = 0  # wake words that opened the gate ([wake])
    wakes_rejected: int = 0  # detected, but not in the recogniser's text (wake.confirm; stream/wake_check.py)
    wakes_unchecked: int = 0  # of wakes: let through without the check (it failed or came too late)
    wake_timeouts: int = 0  # ... after which nobody spoke within wake.listen_timeout_ms
    wake_frames_skipped: int = 0  # frames of silence the detector rested on (wake.skip_silence)
    follow_ups: int = 0  # finals of utterances heard in a follow-up window (wake.follow_up_s), no wake word
    draft_tokens: int = 0  # tokens of the drafts its decodes were handed (the previous hypothesis)
    draft_accepted: int = 0  # ... that the decoder agreed with (taken in one call, not decoded again)
    decode_s: float = 0.0  # engine time spent on this stream's decodes (partials included)
    audio_s: float = 0.0  # audio those decodes covered

    @property
    def rtf(self) -> float | None:
        """Real-time factor of this stream's recognition: engine seconds per second of audio."""
        return round(self.decode_s / self.audio_s, 4) if self.audio_s else None

    def as_dict(self) -> dict:
        return {**vars(self), "rtf": self.rtf}
