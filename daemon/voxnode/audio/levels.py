"""Per-second sound levels of a stream: a microphone check that needs no model."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from voxnode.audio.format import PERIOD_S
from voxnode.audio.frames import Frame

FRAMES_PER_REPORT = round(1.0 / PERIOD_S)  # one report per second
_LOUD_DBFS = -45.0  # frames above this count as "active" (a crude speech hint, not a VAD)


@dataclass(frozen=True)
class LevelReport:
    stream: str
    t_wall: float
    rms_dbfs: float
    peak_dbfs: float
    active_fraction: float

    def as_dict(self) -> dict:
        return {
            "type": "level",
            "stream": self.stream,
            "rms_dbfs": round(self.rms_dbfs, 1),
            "peak_dbfs": round(self.peak_dbfs, 1),
            "active": round(self.active_fraction, 2),
        }


def dbfs(x: float) -> float:
    return 20.0 * math.log10(max(x, 1e-9))


class LevelMeter:
    def __init__(self, stream: str):
        self.stream = stream
        self._reset()

    def _reset(self) -> None:
        self._sq = 0.0
        self._n = 0
        self._peak = 0
        self._active = 0
        self._frames = 0
        self._t0 = 0.0

    def add(self, frame: Frame) -> LevelReport | None:
        x = frame.samples.astype(np.float32) / 32768.0
        if self._frames == 0:
            self._t0 = frame.t_wall
        energy = float(np.dot(x, x))
        self._sq += energy
        self._n += x.size
        self._peak = max(self._peak, int(np.abs(frame.samples.astype(np.int32)).max(initial=0)))
        self._active += dbfs(math.sqrt(energy / max(x.size, 1))) > _LOUD_DBFS
        self._frames += 1
        if self._frames < FRAMES_PER_REPORT:
            return None
        report = LevelReport(
            self.stream,
            self._t0,
            dbfs(math.sqrt(self._sq / max(self._n, 1))),
            dbfs(self._peak / 32768.0),
            self._active / self._frames,
        )
        self._reset()
        return report
