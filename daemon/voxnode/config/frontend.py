"""[frontend]: signal clean-up before VAD and recognition."""

from dataclasses import dataclass

from voxnode.config.fields import setting
from voxnode.frontend.enhance import ENGINES as DENOISE_ENGINES


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
        'Noise suppression: "off", "vad" (the VAD hears denoised audio, recognition the original), "all" '
        '(both denoised) or "asr" (recognition denoised, the VAD the original). true/false from older configs '
        'mean "all"/"off". See docs/frontend.md for the measurements.',
        choices=("off", "vad", "all", "asr"),
        aliases=((True, "all"), (False, "off")),
    )
    denoise_engine: str = setting(
        "spectral",
        'Which noise suppressor frontend.denoise uses: "spectral" (built in, Wiener gain; adds 20 ms) or '
        '"webrtc" (WebRTC\'s noise suppressor; adds 6 ms).',
        choices=DENOISE_ENGINES,
    )
    denoise_floor_db: float = setting(
        -12.0,
        "Most the denoiser attenuates (a frequency bin; deeper causes musical noise); webrtc takes the nearest "
        "of its levels -6 / -12 / -18 / -21 dB.",
        min=-40.0,
        max=-3.0,
    )
