from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class Frame:
    """One period (audio/format.py) of mono audio as captured.

    Times are of the first sample, estimated when the period was read (a
    period an idle capture read late on purpose, audio/capture_pace.py: from
    `t_capture`): the monotonic one for latency arithmetic, the wall-clock one
    for timestamps that leave the process. `t_capture` (monotonic too) is estimated from how
    many frames the device has delivered (audio/stream_clock.py): it does not
    move with when the period was read, so two devices' frames pair by it
    (the echo reference's); it may step back a little as the estimate tightens.
    """

    seq: int
    samples: np.ndarray  # int16, shape (format.PERIOD_FRAMES,)
    t_mono: float
    t_wall: float
    t_capture: float
