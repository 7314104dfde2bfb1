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
    denoise: bool = setting(
        False, "Spectral noise suppression of the audio sent to recognition (adds 20 ms; see docs/frontend.md)."
    )
    denoise_floor_db: float = setting(
        -12.0, "Most the denoiser attenuates a frequency bin; deeper causes musical noise.", min=-40.0, max=-3.0
    )
