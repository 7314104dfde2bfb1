"""The wake-word benchmark's detection (scripts/bench/wake.py): the detector's averaged probability per
frame from one run, where each cutoff fires on it, and the cutoffs tried per model."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from scripts.bench.wake_conditions import LATE_S, REFRACTORY_MS, SWEEP
from voxnode.wake.detector import WakeDetector
from voxnode.wake.models import load_wake_model
from voxnode.wake.silence import SilenceSkip


@dataclass
class Run:
    series: np.ndarray  # per 20 ms frame: the detector's averaged probability after that frame
    cpu_s: float


def detect(model: str, audio: np.ndarray, xnnpack: bool = True, flags: np.ndarray | None = None) -> Run:
    """The averaged probability after every frame, from a detector that never fires (cutoff above
    any probability), so that every cutoff can be tried on one run (`events`). `flags`: the
    front-end's speech verdict per frame; the detector then rests on silence as the daemon's closed
    gate has it do (wake.skip_silence; a frame it does not hear scores 0)."""
    d = WakeDetector(load_wake_model(model, threshold=0.9999), 0, xnnpack=xnnpack)
    pcm = np.clip(np.round(audio), -32768, 32767).astype(np.int16)
    n = (len(pcm) - 320) // 320 + 1
    series = np.zeros(max(0, n), dtype=np.float32)
    skip = SilenceSkip() if flags is not None else None
    t0 = time.process_time()
    for k in range(n):
        frame = pcm[k * 320 : (k + 1) * 320]
        if skip is None:
            d.process(frame)
        else:
            heard = skip.frames(frame, bool(flags[k]))  # type: ignore[index]
            if not heard:
                continue
            for f in heard:
                d.process(f)
        series[k] = d.last_probability
    return Run(series, time.process_time() - t0)


def speech_flags(audio: np.ndarray) -> np.ndarray:
    """The daemon's front-end verdict (default config: high-pass, Silero VAD, noise gate) per frame."""
    from voxnode.config import Config
    from voxnode.frontend.chain import FrontEnd
    from voxnode.stream.params import frontend_params

    fe = FrontEnd(frontend_params(Config()))
    pcm = np.clip(np.round(audio), -32768, 32767).astype(np.int16)
    n = (len(pcm) - 320) // 320 + 1
    return np.array([fe.process(pcm[k * 320 : (k + 1) * 320]).speech for k in range(max(0, n))], dtype=bool)


def events(series: np.ndarray, cutoff: float, refractory_ms: int = REFRACTORY_MS) -> list[float]:
    """Where the detector with this cutoff fires (seconds): the averaged probability above the cutoff,
    then nothing for the refractory period (as WakeDetector does)."""
    gap = refractory_ms // 20
    out, allowed = [], 0
    for i in np.flatnonzero(series > cutoff):
        if i >= allowed:
            out.append(float(i + 1) * 0.02)
            allowed = i + gap
    return out


def accepted(series: np.ndarray, start: float, end: float, cuts) -> dict[str, bool]:
    """Per cutoff label: whether the detector fired between the phrase's start and LATE_S after its end."""
    return {label: any(start <= t <= end + LATE_S for t in events(series, cutoff)) for label, cutoff in cuts}


def manifest_cutoff(model: str) -> float:
    """The cutoff the model's author tuned (its manifest), not voxnode's SHIPPED_CUTOFFS."""
    return load_wake_model(model).manifest_cutoff


def cutoffs_for(model: str) -> list[tuple[str, float]]:
    own = manifest_cutoff(model)
    return [("model", own)] + [(f"{c:g}", c) for c in SWEEP if abs(c - own) > 1e-6]
