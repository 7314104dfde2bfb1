"""Whisper's log-mel spectrogram in numpy.

Matches openai-whisper's `log_mel_spectrogram`: periodic Hann window of 400,
hop 160, centred STFT with reflect padding, power spectrum without the last
frame, 80 Slaney-style mel filters (librosa's default, `htk=False`,
`norm="slaney"`), log10 clamped 8 decades below the maximum, scaled to about
[-1, 1].
"""

from __future__ import annotations

import numpy as np

SAMPLE_RATE = 16000
N_FFT = 400
HOP_LENGTH = 160
N_MELS = 80

# Slaney's auditory scale: linear below 1 kHz, logarithmic above.
_F_SP = 200.0 / 3
_MIN_LOG_HZ = 1000.0
_MIN_LOG_MEL = _MIN_LOG_HZ / _F_SP
_LOGSTEP = np.log(6.4) / 27.0


def hz_to_mel(hz: float | np.ndarray) -> np.ndarray:
    hz = np.asarray(hz, dtype=np.float64)
    log_part = _MIN_LOG_MEL + np.log(np.maximum(hz, _MIN_LOG_HZ) / _MIN_LOG_HZ) / _LOGSTEP
    return np.where(hz >= _MIN_LOG_HZ, log_part, hz / _F_SP)


def mel_to_hz(mel: np.ndarray) -> np.ndarray:
    mel = np.asarray(mel, dtype=np.float64)
    log_part = _MIN_LOG_HZ * np.exp(_LOGSTEP * (np.maximum(mel, _MIN_LOG_MEL) - _MIN_LOG_MEL))
    return np.where(mel >= _MIN_LOG_MEL, log_part, mel * _F_SP)


def mel_filters(sr: int = SAMPLE_RATE, n_fft: int = N_FFT, n_mels: int = N_MELS) -> np.ndarray:
    """[n_mels, n_fft // 2 + 1] triangular filters, area-normalised (Slaney)."""
    fft_hz = np.fft.rfftfreq(n_fft, 1.0 / sr)
    edges_hz = mel_to_hz(np.linspace(hz_to_mel(0.0), hz_to_mel(sr / 2.0), n_mels + 2))
    widths = np.diff(edges_hz)
    distance = edges_hz[:, None] - fft_hz[None, :]
    rising = -distance[:-2] / widths[:-1, None]
    falling = distance[2:] / widths[1:, None]
    weights = np.maximum(0.0, np.minimum(rising, falling))
    weights *= (2.0 / (edges_hz[2:] - edges_hz[:-2]))[:, None]
    return weights.astype(np.float32)


def power_spectrogram(audio: np.ndarray) -> np.ndarray:
    """[n_frames, n_fft // 2 + 1] power of the centred STFT, last frame dropped (like Whisper)."""
    audio = np.asarray(audio, dtype=np.float32)
    padded = np.pad(audio, N_FFT // 2, mode="reflect")
    n_frames = 1 + (len(padded) - N_FFT) // HOP_LENGTH
    frames = np.lib.stride_tricks.as_strided(
        padded, shape=(n_frames, N_FFT), strides=(padded.strides[0] * HOP_LENGTH, padded.strides[0])
    )
    window = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(N_FFT) / N_FFT)).astype(np.float32)
    # The engine zero-pads an utterance to its window (a 2.8 s utterance, the median, fills less
    # than half of the 6 s one): frames of nothing but zeros have zero power, and the FFT (1.5 of
    # the 2.1 ms of a 6 s window here) runs only up to the last frame that holds a sample. Each
    # frame's transform is its own: the frames computed are the same to the bit (tests/asr).
    held = padded[::-1] != 0
    last = len(padded) - 1 - int(np.argmax(held))  # the last sample that is not zero
    live = min(n_frames, last // HOP_LENGTH + 1) if held[np.argmax(held)] else 0
    power = np.zeros((n_frames, N_FFT // 2 + 1), np.float32)
    spectrum = np.fft.rfft(frames[:live] * window, axis=-1)
    power[:live] = spectrum.real.astype(np.float32) ** 2 + spectrum.imag.astype(np.float32) ** 2
    return power[:-1]


class LogMel:
    """Holds the filterbank so it is computed once per engine, not per call."""

    def __init__(self, n_mels: int = N_MELS) -> None:
        self.filters = mel_filters(n_mels=n_mels)

    def __call__(self, audio: np.ndarray) -> np.ndarray:
        """float32 16 kHz audio (len >= 201 samples) -> [n_frames, n_mels] with n_frames = len // 160."""
        if len(audio) <= N_FFT // 2:
            audio = np.pad(audio, (0, N_FFT // 2 + 1 - len(audio)))
        mel = power_spectrogram(audio) @ self.filters.T
        log_mel = np.log10(np.maximum(mel, 1e-10))
        log_mel = np.maximum(log_mel, log_mel.max() - 8.0)
        return ((log_mel + 4.0) / 4.0).astype(np.float32)
