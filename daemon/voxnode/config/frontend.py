"""[frontend]: signal clean-up before VAD and recognition."""

from dataclasses import dataclass

from voxnode.config.fields import setting

# frontend.denoise_engine -> (module, class) of the enhancer (frontend/enhance.py `Enhancer`, built
# with `floor_db`; imported only when chosen): the one list of names. The candidates measured and not
# adopted (speex, RNNoise, webrtc-noise-gain) are in scripts/bench/enhancers.py (docs/frontend.md).
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
        "speex",
        'With an echo_reference, what recognition hears: "speex" (SpeexDSP\'s echo canceller, libspeexdsp1: '
        'keeps a talker over the playback, WER 0.06-0.11 at 0/-10 dB), "webrtc" (WebRTC AEC3: takes the '
        'talker out with the echo, 0.49-0.90) or "off" (the microphone as it is, 0.25-0.92). The VAD always '
        "hears AEC3's output. Measured by make bench-aec; docs/voice-assistant.md.",
        choices=("speex", "webrtc", "off"),
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
