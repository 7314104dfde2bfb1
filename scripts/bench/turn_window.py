"""The end-of-turn model hearing only the audio there is (a measured candidate, not the daemon's).

The daemon's model (stream/turn.py) always hears 8 s: 800 mel frames, 400 encoder positions, the
audio zero-padded in front, so a 2 s command pays for 8 s (78-85 ms per call on one core of the
2-vCPU AMD EPYC, 826 ms on the emulated Pi 4). `scripts.convert.smart_turn --window` builds the same
network with the positional rows as an input (as our Whisper encoder: no shape-dependent
slicing), so one graph serves any whole number of seconds; `WindowTurnModel` gives it the audio's
length rounded up to whole seconds (at least a minimum, at most 8) and the LAST rows of the 400
positions, where the speech sits in the 8 s input. At 8 s its probabilities equal the shipped
file's (84 cuts: max |difference| 0). scripts.bench.endpoint_verdicts --turn-min-seconds compares its
calls with the 8 s ones.
"""

from __future__ import annotations

import numpy as np

from scripts import REPO
from voxnode.asr.mel import LogMel
from voxnode.audio.format import SAMPLE_RATE
from voxnode.models.runtime import load_runtime

DEFAULT_DIR = REPO / "build" / "smart-turn-v3.2-window"  # scripts.convert.smart_turn --window --out here
TURN_SECONDS = 8
FRAMES_PER_SECOND = SAMPLE_RATE // 160


def window_seconds(n_samples: int, min_seconds: int) -> int:
    """The audio's length rounded up to whole seconds, at least `min_seconds`, at most 8."""
    return max(min_seconds, min(TURN_SECONDS, -(-n_samples // SAMPLE_RATE)))


def window_features(audio: np.ndarray, mel: LogMel, seconds: int) -> np.ndarray:
    """[100 * seconds, 80]: stream/turn.py's turn_features for a window of `seconds`. The waveform
    is normalised with the mean and variance of the audio zero-padded to 8 s (as the 8 s input is),
    so the frames are the last frames of the 8 s features but the first (its STFT reflects at the
    window's edge). Normalising over the window instead changed no conclusion (measured at 2-6 s
    minimums, clean, pink and babble 10 dB: the calls at 0.9 within 2 of these)."""
    n, full = seconds * SAMPLE_RATE, TURN_SECONDS * SAMPLE_RATE
    heard = np.asarray(audio[-full:], dtype=np.float64)
    mean = heard.sum() / full
    var = max(float((heard**2).sum() / full - mean**2), 0.0)
    x = np.pad(np.asarray(audio[-n:], dtype=np.float32), (max(0, n - len(audio)), 0))
    return mel(((x - mean) / np.sqrt(var + 1e-7)).astype(np.float32))[: seconds * FRAMES_PER_SECOND]


class WindowTurnModel:
    """The --window graph on LiteRT, one thread: (audio, seconds) -> P(finished). The interpreter is
    resized when the window changes (measured: no cost visible beside the call's)."""

    def __init__(self, model_dir=DEFAULT_DIR, num_threads: int = 1) -> None:
        missing = [f for f in ("smart_turn.tflite", "positions.npy") if not (model_dir / f).exists()]
        if missing:
            raise SystemExit(
                f"{model_dir} lacks {', '.join(missing)}: build it with "
                f"`.venv-convert/bin/python -m scripts.convert.smart_turn --window --out {model_dir}`"
            )
        self.it = load_runtime().interpreter_class(
            model_path=str(model_dir / "smart_turn.tflite"), num_threads=num_threads
        )
        ins = {d["name"]: d["index"] for d in self.it.get_input_details()}
        self._mel = next(i for n, i in ins.items() if "mel" in n)
        self._pos = next(i for n, i in ins.items() if "positions" in n)
        self._out = self.it.get_output_details()[0]["index"]
        self.positions = np.load(model_dir / "positions.npy").astype(np.float32)
        self.mel = LogMel()
        self._seconds = 0

    def __call__(self, audio: np.ndarray, seconds: int) -> float:
        rows = seconds * FRAMES_PER_SECOND // 2
        if seconds != self._seconds:
            self.it.resize_tensor_input(self._mel, [1, 1, 2 * rows, 80])
            self.it.resize_tensor_input(self._pos, [rows, self.positions.shape[1]])
            self.it.allocate_tensors()
            self._seconds = seconds
        self.it.set_tensor(self._mel, window_features(audio, self.mel, seconds)[None, None])
        self.it.set_tensor(self._pos, self.positions[len(self.positions) - rows :])
        self.it.invoke()
        return float(self.it.get_tensor(self._out).reshape(-1)[0])


def main() -> None:
    """ms per call at each window on one thread (median of --calls calls; log-mel included), saved."""
    import argparse
    import json
    import os
    import time
    from pathlib import Path

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=40)
    ap.add_argument("--model-dir", type=Path, default=DEFAULT_DIR)
    ap.add_argument("--save", type=Path, default=REPO / "scripts" / "bench" / "results" / "turn_window_cost.json")
    args = ap.parse_args()
    model = WindowTurnModel(args.model_dir)
    audio = np.random.default_rng(0).normal(0, 3000, TURN_SECONDS * SAMPLE_RATE).astype(np.float32)
    rows = []
    load_before = os.getloadavg()[0]
    for s in range(1, TURN_SECONDS + 1):
        model(audio, s)  # resize and warm
        wall, cpu = [], []
        for _ in range(args.calls):
            t0, c0 = time.perf_counter(), time.thread_time()
            model(audio, s)
            wall.append(time.perf_counter() - t0)
            cpu.append(time.thread_time() - c0)
        row = {"seconds": s, "median_ms": round(1e3 * float(np.median(wall)), 1)}
        row["median_cpu_ms"] = round(1e3 * float(np.median(cpu)), 1)
        rows.append(row)
        print(f"{s} s: {row['median_ms']} ms per call (CPU {row['median_cpu_ms']} ms)", flush=True)
    t0 = time.perf_counter()
    order = [2, 8, 3, 8, 2, 8] * 5
    for s in order:
        model(audio, s)
    alternating = 1e3 * (time.perf_counter() - t0) / len(order)
    expected = float(np.mean([rows[s - 1]["median_ms"] for s in order]))
    print(f"windows alternating 2/8/3 s (a resize each call): {alternating:.1f} ms per call, {expected:.1f} without")
    load = [load_before, os.getloadavg()[0]]
    print(f"load average {load[0]:.2f} before, {load[1]:.2f} after")
    result = {"calls": args.calls, "threads": 1, "load": load, "rows": rows, "alternating_ms": round(alternating, 1)}
    args.save.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
