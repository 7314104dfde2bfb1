"""A stream's noise floor: how loud the room is between words, tracked on every frame.

Real rooms are never silent: a fan, a TV or other talkers run through the pauses. A frame VAD
answers "does this sound like a voice?", and with a TV or other talkers the answer is yes all the
time; the WebRTC VAD also says yes to loud steady noise (measured: at speech -16 dBFS, pink noise
at 5 dB SNR is "speech" in 65 % of its frames, at -26 dBFS in 0 %). The floor answers the question
the segmenter needs in a room: does this frame stand above the room?

* level: each frame's power in the speech band (300-3400 Hz, from the front-end's STFT: rumble
  and the hiss above 4 kHz do not mask a voice there);
* floor: the 20th percentile of that level over the last `window_frames` (10 s): between words and
  sentences every room falls back to it, and a voice close to the microphone rarely covers 80 % of
  ten seconds; for steady noise it equals the noise's mean level within 0.5 dB. It follows a
  quieter room at once but rises at most RISE_DB_PER_S: a talker who starts the moment the stream
  opens, or dictates for half a minute, would otherwise become the floor and be gated out (a
  7 s sentence with no silence around it kept 24 % of its frames without the limit). Digital
  silence (below -100 dBFS: a device starting up, a muted input) is not a room and not counted;
* spread: 20th minus 5th percentile: how much the room itself fluctuates (measured, dB: white and
  pink noise 0.5, HVAC rumble 2.7, six-talker babble 4.4, music 7);
* peak: the level's maximum over the last 200 ms, so a syllable keeps an utterance alive through
  the dips between sounds;
* a frame stands above the room when peak > floor + margin_db + spread_factor * spread: a steady
  fan needs a voice only a couple of dB above it, babble needs one clearly louder than its own
  peaks.

The octave-band floors are the room's spectrum, reported in health (sampled every 5th frame).
Cost, with the STFT it needs: +0.05 ms per 20 ms frame (0.25 % of a core) in the front-end alone
(percentiles every 5 frames, by partial sort), +0.7-1.0 % of a core per idle stream in the
daemon (scripts/bench/stream.py with and without vad.noise_gate).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from voxnode.audio.format import PERIOD_S, SAMPLE_RATE, frames

SPEECH_BAND_HZ = (300.0, 3400.0)
OCTAVES_HZ = (125, 250, 500, 1000, 2000, 4000)  # centre frequencies of the reported spectrum
FLOOR_PERCENTILE = 20.0
SPREAD_PERCENTILE = 5.0
PEAK_MS = 200
UPDATE_EVERY = 5  # frames between percentile updates
SETTLE_MS = 1000  # the first second of sound sets the floor freely (start-up transients); then it is rate-limited
RISE_DB_PER_S = 3.0  # a TV switched on 20 dB above the room is the floor 7 s later
# The spread learns slowly too (speech in a short window looks like a fluctuating room) and is
# capped: music, the most fluctuating room measured, spreads 7 dB.
SPREAD_RISE_DB_PER_S = 1.0
MAX_SPREAD_DB = 6.0
DIGITAL_SILENCE_DBFS = -100.0
WARMUP_MS = 200  # before this much audio the floor is not trusted: every frame stands above it
SILENT_DBFS = -120.0
_FULL_SCALE_POWER = 32768.0**2


@dataclass(frozen=True)
class FloorReading:
    level_dbfs: float  # this frame, speech band
    floor_dbfs: float  # the room between words, speech band
    spread_db: float  # how much the room itself fluctuates
    above: bool  # the last 200 ms stand above the room (always True while warming up)


class NoiseFloor:
    """Feed each hop's power spectrum |X|^2 (StftAnalyzer, 40 ms sqrt-Hann window, 20 ms hop)."""

    def __init__(
        self, bins: int, *, margin_db: float, spread_factor: float, window_frames: int, rate: int = SAMPLE_RATE
    ):
        self.margin_db = margin_db
        self.spread_factor = spread_factor
        hz = np.fft.rfftfreq(2 * (bins - 1), 1 / rate)
        band = np.nonzero((hz >= SPEECH_BAND_HZ[0]) & (hz <= SPEECH_BAND_HZ[1]))[0]
        self._speech = slice(int(band[0]), int(band[-1]) + 1)  # contiguous bins: a slice, not a mask
        self._octaves = np.array([(hz >= c / math.sqrt(2)) & (hz < c * math.sqrt(2)) for c in OCTAVES_HZ], float)
        n = 2 * (bins - 1)
        # |X|^2 of a sqrt-Hann-windowed frame of n samples -> mean-square signal power: Parseval with
        # the one-sided spectrum (x2) and the window's energy (sum w^2 = n/2).
        self._to_ms = 2.0 / (n * n / 2) / _FULL_SCALE_POWER
        self.window_frames = max(UPDATE_EVERY, window_frames)
        self._levels: deque[float] = deque(maxlen=self.window_frames)
        self._octave_levels: deque[np.ndarray] = deque(maxlen=self.window_frames // UPDATE_EVERY)
        self._peak: deque[float] = deque(maxlen=frames(PEAK_MS))
        self._warmup = frames(WARMUP_MS)
        self._settle = frames(SETTLE_MS)
        self.frames = 0
        self.floor_dbfs = SILENT_DBFS
        self.spread_db = 0.0
        self.last = FloorReading(SILENT_DBFS, SILENT_DBFS, 0.0, True)

    def _dbfs(self, power: float) -> float:
        return 10 * math.log10(power * self._to_ms + 1e-12)

    def update(self, power: np.ndarray) -> FloorReading:
        level = self._dbfs(float(power[self._speech].sum()))
        if level <= DIGITAL_SILENCE_DBFS:  # a device's digital silence is not a room: not counted
            self.frames += 1
            self.last = FloorReading(level, self.floor_dbfs, self.spread_db, self.frames <= self._warmup)
            return self.last
        self._levels.append(level)
        if self.frames % UPDATE_EVERY == 0:  # the reported spectrum: every 5th frame is plenty
            self._octave_levels.append(self._octaves @ power)
        self._peak.append(level)
        self.frames += 1
        if self.frames % UPDATE_EVERY == 0 or len(self._levels) == 1:
            # Two order statistics by partial sort: ~5x cheaper than np.percentile's interpolation.
            levels = np.fromiter(self._levels, float, len(self._levels))
            n = len(levels) - 1
            k5, k20 = round(n * SPREAD_PERCENTILE / 100), round(n * FLOOR_PERCENTILE / 100)
            part = np.partition(levels, (k5, k20))
            p5, p20 = float(part[k5]), float(part[k20])
            p20f, spread = p20, min(MAX_SPREAD_DB, p20 - p5)
            if len(self._levels) <= self._settle:
                self.floor_dbfs, self.spread_db = p20f, spread  # the first second: nothing to compare with yet
            else:
                dt = UPDATE_EVERY * PERIOD_S
                self.floor_dbfs = min(p20f, self.floor_dbfs + RISE_DB_PER_S * dt)
                self.spread_db = min(spread, self.spread_db + SPREAD_RISE_DB_PER_S * dt)
        above = (
            self.frames <= self._warmup
            or max(self._peak) > self.floor_dbfs + self.margin_db + self.spread_factor * self.spread_db
        )
        self.last = FloorReading(level, self.floor_dbfs, self.spread_db, above)
        return self.last

    def spectrum_dbfs(self) -> list[float]:
        """The floor per octave band (OCTAVES_HZ), dBFS; empty before the first frame."""
        if not self._octave_levels:
            return []
        bands = np.percentile(np.stack(self._octave_levels), FLOOR_PERCENTILE, axis=0)
        return [round(self._dbfs(float(v)), 1) for v in bands]
