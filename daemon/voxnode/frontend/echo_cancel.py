"""`echo_reference`: the node's own playback taken out of the microphone, first in the front-end.

Two cancellers, each where it measured best (scripts/bench/aec.py, docs/voice-assistant.md): the
VAD hears WebRTC AEC3's output (below; with its suppressor it takes the most echo out, so the node's
own voice opens no utterance), recognition SpeexDSP's (frontend/echo_speex.py; `frontend.echo_cancel`),
which keeps a talker over the playback that AEC3 suppresses with the echo.

WebRTC AEC3 (the echo canceller of Chrome, PipeWire's and PulseAudio's echo-cancel modules), through
`pywebrtc-audio` (Apache-2.0; WebRTC is BSD-3-Clause; aarch64 wheels): it estimates the delay
between the reference and its echo itself (AEC3's delay estimator; no hint is given), adapts a
linear filter and suppresses what is left. Frames are 20 ms (two of AEC3's 10 ms blocks). Measured
here (scripts/bench/aec.py): its output is 128 samples (8 ms) late (cross-correlation with the input
on real speech, no echo); 0.6-0.7 % of a core per stream on speech and on music (x86_64, load 6-8,
niced), with its input dithered (DITHER_SEED; 1.9 % on speech without: denormals in its silences).

What it reports (health, Prometheus): ERLE, the echo return loss enhancement (microphone power over
output power in a frame while the reference plays; the 75th percentile of the last 5 s of such
frames, so that a near-end talker over the playback, who is in both and pulls a frame's figure to
0 dB, does not hide what the canceller does to the echo; 20-45 dB on echo alone), and the delay
of the echo behind the reference as the two captures pair them (by capture time: the acoustic path
plus any offset in the devices' own capture; AEC3 needs it above 0 and below about 0.5 s), estimated here apart
from AEC3 (which does not expose its own) by GCC-PHAT over 2 s windows. SpeexDSP hears the
reference delayed by that estimate (ReferenceDelay), so its filter covers the room's tail.

While the node plays nothing (the reference silent for REST_AFTER_FRAMES) the cancellers and the
estimator rest: the microphone passes as it is (2.8 -> 0.09 % of a core per stream, x86_64).
While it plays, per stream (`make bench-aec`'s four recordings, 73 s each, x86_64, load 6-7, niced,
before and after interleaved on the same audio, median of 3): 0.93-1.06 % of a core (1.00-2.00 %
before the dither), of which AEC3 0.6-0.7 %, SpeexDSP 0.25 %, the delay estimator 0.015 % (settled)
and the Python around them 0.03 %.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

from voxnode.audio.format import PERIOD_FRAMES, SAMPLE_RATE

from .errors import FrontendError

LATENCY_SAMPLES = 128
# A reference frame above this level is the node playing something (a reference device that is
# open but silent sits at digital zero; a monitor of a noisy DAC a little above -90 dBFS).
ACTIVE_DBFS = -60.0
ERLE_FRAMES = 250  # ERLE: over the last 5 s of playing frames
ERLE_MIN_FRAMES = 50  # ERLE is reported after this many playing frames
ERLE_PERCENTILE = 75
DELAY_WINDOW_FRAMES = 100  # 2 s of audio per delay estimate
# The first estimate from 1 s: SpeexDSP's filter starts afresh on the aligned reference then, and each
# second sooner is a second more to converge before a command (scripts/bench/aec.py: 4 s after start-up).
DELAY_FIRST_WINDOW_FRAMES = 50
DELAY_MAX_S = 0.5  # the longest echo delay looked for (AEC3 itself covers about this much)
DELAY_BAND_HZ = (200.0, 4000.0)
# The reference SpeexDSP hears is delayed by the estimated echo delay less this, so that its filter's
# taps cover the room's tail rather than the delay (a margin for the early reflections and an estimate
# a little late); a new estimate moves it only when it differs by more than ALIGN_TOLERANCE_MS (each
# move costs the filter some re-adaptation; GCC-PHAT's estimates of one path differ by a sample or two).
ALIGN_MARGIN_MS = 20
ALIGN_TOLERANCE_MS = 10
DELAY_MIN_PEAK = 4.0  # a GCC-PHAT peak this many times the mean |correlation| counts as an estimate
# Once two estimates in a row agree (within ALIGN_TOLERANCE_MS), the estimator looks again only after
# this many frames: a node's devices keep their delay, and the estimate costs 0.04 ms per frame spread
# over its window (x86_64, 0.2 % of a core); a sixth of that once settled.
DELAY_RECHECK_FRAMES = 500
# AEC3 hears the reference and the microphone with their lowest bit flipped by a fixed pseudo-random
# pattern (+-1 LSB, -93 dBFS; XOR never overflows int16): on digital silence (the gaps of the
# node's spoken answers, a reference that delivers nothing) AEC3's filters decay into denormal floats,
# which x86 computes many times slower. Measured (`make bench-aec`'s speech 0 dB recording, 73 s, 682
# of its 3649 reference frames digital zero; x86_64, load 8, niced): AEC3 alone 1.93 -> 0.59 % of a
# core (the CPU's flush-to-zero mode instead: 0.57 %; the reference dithered alone 0.65 %); on music,
# never digitally silent, 0.69 % either way. Both cancellers per stream: 1.50 -> 0.97 % (below).
DITHER_SEED = 24


class DelayEstimator:
    """The delay of the echo behind the reference, from GCC-PHAT over 2 s windows (the first one 1 s)
    in which the reference played: one FFT pair per window (about 1 ms of CPU), None until a clear peak."""

    def __init__(self) -> None:
        self.delay_ms: float | None = None
        self._mic: list[np.ndarray] = []
        self._ref: list[np.ndarray] = []
        self._active = 0
        self._wait = 0  # frames before the next window (a settled estimate)

    def add(self, mic: np.ndarray, ref: np.ndarray, active: bool) -> None:
        if self._wait:
            self._wait -= 1
            return
        self._mic.append(mic)
        self._ref.append(ref)
        self._active += active
        window = DELAY_WINDOW_FRAMES if self.delay_ms is not None else DELAY_FIRST_WINDOW_FRAMES
        if len(self._mic) < window:
            return
        if self._active >= window // 2:
            self._estimate(np.concatenate(self._mic), np.concatenate(self._ref))
        self._mic, self._ref, self._active = [], [], 0

    def _estimate(self, mic: np.ndarray, ref: np.ndarray) -> None:
        n = 1 << math.ceil(math.log2(2 * len(mic)))
        cross = np.fft.rfft(mic.astype(np.float64), n) * np.conj(np.fft.rfft(ref.astype(np.float64), n))
        hz = np.fft.rfftfreq(n, 1 / SAMPLE_RATE)
        # Whitened over the speech band only: bins where neither signal has energy (below the
        # loudspeaker's range, above the music's) whiten to unit weight and pile up at lag 0 (measured:
        # 0 ms on music and on a silent reference stretch without the band, 60 ms of 60 with it).
        band = (hz >= DELAY_BAND_HZ[0]) & (hz <= DELAY_BAND_HZ[1])
        corr = np.fft.irfft(np.where(band, cross / (np.abs(cross) + 1e-9), 0.0), n)[: int(DELAY_MAX_S * SAMPLE_RATE)]
        peak = int(np.argmax(corr))
        if corr[peak] > DELAY_MIN_PEAK * float(np.mean(np.abs(corr))):
            delay_ms = round(1000 * peak / SAMPLE_RATE, 1)
            if self.delay_ms is not None and abs(delay_ms - self.delay_ms) <= ALIGN_TOLERANCE_MS:
                self._wait = DELAY_RECHECK_FRAMES
            self.delay_ms = delay_ms


RECOGNITION = ("speex", "webrtc", "off")  # frontend.echo_cancel: what recognition hears
# The cancellers rest after this many frames of a silent reference (the node plays nothing: the common
# case): the longest echo delay looked for (DELAY_MAX_S) plus a room's tail (RT60 0.3-0.5 s) has passed,
# so the echo has died away and their histories hold silence; they start again with the next playing frame.
REST_AFTER_FRAMES = 50


class ReferenceDelay:
    """The reference, `samples` late (up to DELAY_MAX_S): a delay line of int16 frames."""

    def __init__(self) -> None:
        self._line = np.zeros(int(DELAY_MAX_S * SAMPLE_RATE) + PERIOD_FRAMES, dtype=np.int16)
        self.samples = 0

    def process(self, frame: np.ndarray) -> np.ndarray:
        n = len(frame)
        self._line[:-n] = self._line[n:]
        self._line[-n:] = frame
        end = len(self._line) - self.samples
        return self._line[end - n : end].copy()

    def follow(self, delay_ms: float | None) -> bool:
        """Follow a new delay estimate; True when the delay moved."""
        if delay_ms is None:
            return False
        target = max(0, int((delay_ms - ALIGN_MARGIN_MS) * SAMPLE_RATE / 1000))
        if abs(target - self.samples) <= ALIGN_TOLERANCE_MS * SAMPLE_RATE / 1000:
            return False
        self.samples = target
        return True


class EchoCanceller:
    """One stream's echo cancellers; `process` takes a 20 ms microphone frame and the reference
    frame that goes with it (None when the reference has none: the cancellers hear silence there)
    and gives what the VAD hears (AEC3's output) and what recognition hears (`recognition`:
    frontend.echo_cancel: SpeexDSP's output, AEC3's, or the microphone as it is)."""

    def __init__(self, recognition: str = "speex") -> None:
        if recognition not in RECOGNITION:
            raise FrontendError(f"unknown echo canceller {recognition!r}")
        try:
            from pywebrtc_audio import EchoCanceller as Aec3
        except ImportError as e:
            raise FrontendError(f"echo_reference needs the pywebrtc-audio package ({e}); reinstall voxnode") from None
        self._aec = Aec3(SAMPLE_RATE, 1, 0)
        self.recognition = recognition
        self._speex = None
        if recognition == "speex":
            from .echo_speex import SpeexEchoCanceller

            self._speex = SpeexEchoCanceller()
        # AEC3's output is LATENCY_SAMPLES late; SpeexDSP's and the microphone's are not.
        self.latency_s = LATENCY_SAMPLES / SAMPLE_RATE if recognition == "webrtc" else 0.0
        self._silence = np.zeros(PERIOD_FRAMES, dtype=np.int16)
        bits = np.random.default_rng(DITHER_SEED).integers(0, 2, (2, PERIOD_FRAMES), dtype=np.int16)
        self._dither_near, self._dither_far = bits[0], bits[1]  # two patterns: the two signals' dither uncorrelated
        self._late = np.zeros(LATENCY_SAMPLES, dtype=np.float32)  # resting: the last samples AEC3 held back
        self._aligned = ReferenceDelay()
        self.delay = DelayEstimator()
        self.playing_frames = 0  # frames in which the reference played
        self.active = False  # the latest reference frame played
        self.quiet_frames = REST_AFTER_FRAMES  # frames since the reference last played
        self.rested_frames = 0  # frames the cancellers rested (nothing played for REST_AFTER_FRAMES)
        self._erle: deque[float] = deque(maxlen=ERLE_FRAMES)  # per playing frame, dB

    def process(self, mic: np.ndarray, reference: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """(what the VAD hears, what recognition hears): float32 in int16 scale."""
        near = np.clip(mic, -32768, 32767).astype(np.int16) if mic.dtype != np.int16 else mic
        far = self._silence if reference is None or len(reference) != len(near) else reference
        if far.dtype != np.int16:
            far = np.clip(far, -32768, 32767).astype(np.int16)
        far_f = far.astype(np.float32)
        ref_power = float(np.dot(far_f, far_f)) / len(far) / 32768.0**2
        self.active = ref_power > 10 ** (ACTIVE_DBFS / 10)
        self.quiet_frames = 0 if self.active else self.quiet_frames + 1
        if self.quiet_frames >= REST_AFTER_FRAMES:
            self.rested_frames += 1
            return self._rest(near)
        if self.active:
            self.playing_frames += 1
        self.delay.add(near, far, self.active)
        vad = self._aec.process(self._dithered(near, self._dither_near), self._dithered(far, self._dither_far))
        vad = vad.astype(np.float32)
        near_f = near.astype(np.float32)
        self._late = near_f[-LATENCY_SAMPLES:]  # what AEC3 holds back: the first thing heard when it rests
        if self.active:
            mic_e, out_e = float(np.dot(near_f, near_f)), float(np.dot(vad, vad))
            self._erle.append(10 * math.log10((mic_e + 1.0) / (out_e + 1.0)))
        if self._speex is not None:
            if self._aligned.follow(self.delay.delay_ms):
                self._speex.reset()
            return vad, self._speex.process(near, self._aligned.process(far)).astype(np.float32)
        return vad, (vad if self.recognition == "webrtc" else near_f)

    @staticmethod
    def _dithered(x: np.ndarray, bits: np.ndarray) -> np.ndarray:
        """x with its lowest bit flipped where `bits` is 1 (DITHER_SEED: no digital silence for AEC3)."""
        return x ^ bits if len(x) == len(bits) else x ^ np.resize(bits, len(x))

    def _rest(self, near: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Nothing played for REST_AFTER_FRAMES: the microphone as it is, as late as AEC3's output
        where AEC3's output is heard, so that the audio runs on without a jump. (When it plays again,
        AEC3's first 8 ms out are the ones it held back when it rested.)"""
        x = near.astype(np.float32)
        joined = np.concatenate([self._late, x])
        self._late, late = joined[-LATENCY_SAMPLES:], joined[: len(x)]
        return late, (late if self.recognition == "webrtc" else x)

    @property
    def erle_db(self) -> float | None:
        """Echo return loss enhancement while the reference played; None before ERLE_MIN_FRAMES of it."""
        if len(self._erle) < ERLE_MIN_FRAMES:
            return None
        return round(float(np.percentile(self._erle, ERLE_PERCENTILE)), 1)
