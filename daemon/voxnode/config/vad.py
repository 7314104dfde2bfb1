"""[vad]: which frames are speech, and where an utterance starts and ends."""

from dataclasses import dataclass

from voxnode.config.fields import InvalidValue, setting


@dataclass(frozen=True)
class VadConfig:
    engine: str = setting(
        "webrtc",
        'Frame classifier: "webrtc" (WebRTC GMM), "spectral" (numpy likelihood ratio, no extra package) '
        'or "both" (speech where both agree). See docs/frontend.md for the measurements.',
        choices=("webrtc", "spectral", "both"),
    )
    threshold: float = setting(
        1.0,
        "spectral: band-mean log-likelihood ratio above which a frame is speech (noise alone: 0.58).",
        min=0.6,
        max=20.0,
    )
    aggressiveness: int = setting(3, "webrtc: 0 (lenient) .. 3 (strict).", min=0, max=3)
    min_level_dbfs: float = setting(
        -62.0, "Frames quieter than this (speech band) are never speech.", min=-100.0, max=-10.0
    )
    pre_roll_ms: int = setting(
        300, "Audio kept before the detected onset, so first syllables are not clipped.", min=0, max=2000
    )
    onset_ms: int = setting(60, "Speech needed within onset_window_ms to start an utterance.", min=20, max=1000)
    onset_window_ms: int = setting(100, "Window for onset_ms.", min=20, max=2000)
    hangover_ms: int = setting(
        500, "Silence after the last speech that ends an utterance (endpoint).", min=100, max=5000
    )
    tail_ms: int = setting(
        200,
        "Silence kept after the last speech; once this much silence is seen the final is decoded ahead of "
        "the endpoint, so it is ready when hangover_ms confirms it.",
        min=20,
        max=2000,
    )
    min_speech_ms: int = setting(
        240, "Utterances with less speech than this are discarded (clicks, coughs, door slams).", min=20, max=5000
    )

    def check(self) -> None:
        if self.onset_ms > self.onset_window_ms:
            raise InvalidValue("onset_ms", f"must not exceed onset_window_ms ({self.onset_window_ms})")
        if self.tail_ms > self.hangover_ms:
            raise InvalidValue("tail_ms", f"must not exceed hangover_ms ({self.hangover_ms})")
