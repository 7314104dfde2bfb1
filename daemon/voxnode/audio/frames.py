from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class Frame:
    """One period (audio/format.py) of mono audio as captured.

    Times are of the first sample, estimated when the period was read: the
    monotonic one for latency arithmetic, the wall-clock one for timestamps
    that leave the process.
    """

    seq: int
    samples: np.ndarray  # int16, shape (format.PERIOD_FRAMES,)
    t_mono: float
    t_wall: float
