"""[stream]: utterances, partial transcripts and sharing the engine between streams."""

from dataclasses import dataclass

from voxnode.config.fields import InvalidValue, setting


@dataclass(frozen=True)
class StreamingConfig:
    partials: bool = setting(True, "Emit partial transcripts while someone speaks.")
    partial_interval_ms: int = setting(
        500, "Re-decode the growing utterance this often for partials.", min=100, max=10000
    )
    partial_min_audio_ms: int = setting(800, "No partial before the utterance has this much audio.", min=0, max=10000)
    # A slow board spaces partials out by their own cost: a partial that took d seconds to decode is
    # followed by the next no sooner than d / partial_max_share (and partial_interval_ms). On the
    # 2-core x86 a partial takes ~30-50 ms, so 0.25 never binds; on an emulated Pi 4 (~6x slower
    # per thread, scripts/bench/emulate_board.py) a 180-250 ms partial is repeated every 0.7-1 s instead of
    # every 0.5 s, which keeps a speaking stream within about a third of a Pi 4 core and the engine
    # free for the final when the speaker stops (docs/benchmarks.md, "Emulated boards").
    partial_max_share: float = setting(
        0.25,
        "At most this share of the time goes to one stream's partials: the next partial waits its "
        "predecessor's decode time divided by this (a slow board gets fewer partials); 1 = no limit.",
        min=0.05,
        max=1.0,
    )
    partial_max_wait_ms: int = setting(
        1000, "A partial still queued after this long is skipped (the engine is behind).", min=50, max=30000
    )
    max_utterance_ms: int = setting(
        15000, "Longer speech is cut at its quietest point in the last cut_search_ms.", min=2000, max=30000
    )
    cut_search_ms: int = setting(2000, "Where to look for the quietest point to cut.", min=200, max=10000)
    no_speech_threshold: float = setting(
        0.6,
        "Drop a transcript whose no-speech probability is above this and whose mean token log-probability is "
        "below -1 (Whisper's rule: the model hears no speech and is unsure of the text).",
        min=0.0,
        max=1.0,
    )
    min_confidence: float = setting(
        -1.5, "Drop a transcript whose mean token log-probability is below this.", min=-20.0, max=0.0
    )
    decode_workers: int = setting(
        1,
        "Parallel decodes, each with its own engine instance (~50 MB each; see docs/benchmarks.md).",
        min=1,
        max=8,
    )
    max_pending_finals: int = setting(
        64, "Finals queued beyond this drop the oldest (counted and logged).", min=1, max=10000
    )

    def check(self) -> None:
        if self.cut_search_ms >= self.max_utterance_ms:
            raise InvalidValue("cut_search_ms", f"must be shorter than max_utterance_ms ({self.max_utterance_ms})")
