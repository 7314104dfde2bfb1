"""[frontend]: signal clean-up before VAD and recognition."""

from dataclasses import dataclass

from voxnode.config.fields import setting

# frontend.denoise_engine -> (module, class) of the enhancer (frontend/enhance.py `Enhancer`, built
# with `floor_db`; imported only when chosen): the one list of names. The candidates measured and not
# adopted (speex, RNNoise, webrtc-noise-gain) are in scripts/enhancers.py (docs/frontend.md).
DENOISE_ENGINES: dict[str, tuple[str, str]] = {
    "deepfilter": ("voxnode.frontend.deepfilter", "DeepFilter"),
    "webrtc": ("voxnode.frontend.webrtc_ns", "WebRtcNoiseSuppressor"),
    "spectral": ("voxnode.frontend.denoise", "SpectralDenoiser"),
}


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
    echo_cancel: str = setting(
        "vad",
        'With an echo_reference: "vad" (the VAD and noise gate hear the echo-cancelled audio, recognition and '
        'the wake word the original) or "all" (recognition hears it too). Measured (bench-aec): AEC3 takes '
        "25-45 dB of echo out, but while someone talks over the playback it suppresses the talker too (WER "
        '0.07 -> 0.68 over music), so "vad" is the default. See docs/voice-assistant.md.',
        choices=("vad", "all"),
    )
    denoise_engine: str = setting(
        "deepfilter",
        'Which noise suppressor frontend.denoise uses: "deepfilter" (DeepFilterNet 3, neural; adds 35 ms and '
        '~1 ms of CPU per 20 ms here, ~5x that on a Pi 4), "webrtc" (WebRTC\'s; 6 ms, ~0.02 ms) or '
        '"spectral" (the older built-in Wiener gain; 20 ms). See docs/frontend.md.',
        choices=tuple(DENOISE_ENGINES),
    )
    denoise_floor_db: float = setting(
        -12.0,
        "Most the denoiser takes away, dB: deepfilter's attenuation limit (a mild one keeps some room, which "
        "Whisper copes with better than with a deep cut's artefacts), webrtc's nearest level (-6/-12/-18/-21), "
        "the spectral gain floor.",
        min=-40.0,
        max=-3.0,
    )
