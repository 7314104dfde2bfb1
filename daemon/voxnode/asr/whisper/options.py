"""How the engine decodes: beam width, windows, fallback, prompt and hotwords.

The defaults live in config/asr.py (with the measurements behind them);
`DecodeOptions.from_config` is the one place they are read.
"""

from __future__ import annotations

from dataclasses import dataclass

from voxnode.asr.whisper.window import PARTIAL_WINDOW_SECONDS

ROLES = ("final", "partial")


@dataclass(frozen=True)
class DecodeOptions:
    beam_size: int  # finals; partials are always greedy
    min_window_s: float  # finals' shortest encoder window
    temperatures: tuple[float, ...]  # finals' fallback ladder after the beam search; () = none
    prompt: str  # Whisper's previous-text prompt, "" = none
    hotwords: tuple[str, ...]  # words or phrases made more likely, () = none
    hotword_boost: float  # nats per hotword token in the beam search's ranking; 0 = prompt only
    language: str = "en"  # a Whisper language code, or "auto" (multilingual models only)
    draft: bool = True  # verify a caller's draft tokens in one call and decode only the rest
    draft_margin: float = 1.0  # finals: a draft token is taken only while greedy leads by this many nats
    # partials' shortest encoder window: no config key (scripts/bench/first_window.py --partial-window
    # measures others; window.py says why 6 s)
    partial_window_s: float = PARTIAL_WINDOW_SECONDS

    @classmethod
    def from_config(cls, asr) -> DecodeOptions:
        """From an [asr] section (voxnode.config.asr.AsrConfig)."""
        return cls(
            beam_size=asr.beam_size,
            min_window_s=float(asr.min_window_s),
            temperatures=tuple(float(t) for t in asr.fallback_temperatures),
            prompt=asr.prompt,
            hotwords=tuple(asr.hotwords),
            hotword_boost=float(asr.hotword_boost),
            language=asr.language,
            draft=asr.draft,
            draft_margin=float(asr.draft_margin),
        )
