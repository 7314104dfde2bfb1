"""[frontend]: signal clean-up before VAD and recognition."""

from dataclasses import dataclass

from voxnode.config.fields import setting


@dataclass(frozen=True)
class FrontendConfig:
    highpass_hz: float = setting(
        150.0,
        "High-pass cutoff removing DC, handling noise, rumble and mains hum (also before the VAD); 0 = off.",
        min=0.0,
        max=400.0,
    )
    denoise: str = setting(
        "off",
        'Spectral noise suppression: "off", "vad" (the VAD hears denoised audio, recognition the original) '
        'or "all" (both denoised); adds 20 ms. true/false from older configs mean "all"/"off". See '
        "docs/frontend.md for the measurements.",
        choices=("off", "vad", "all"),
        aliases=((True, "all"), (False, "off")),
    )
    denoise_floor_db: float = setting(
        -12.0, "Most the denoiser attenuates a frequency bin; deeper causes musical noise.", min=-40.0, max=-3.0
    )
