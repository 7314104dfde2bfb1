"""One engine over every clip in its own subprocess (`python -m scripts.bench.asr --worker ...`: its peak
RSS is its own), each clip transcribed once after a warm-up, CPU time per clip; and the peak RSS of
`voxnode transcribe` itself."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import time
from pathlib import Path

import numpy as np

from scripts import REPO
from scripts.bench.asr_engines import RUNNERS, EngineSpec

FIVE_S_CLIP = Path("/usr/share/pocketsphinx/test/data/librivox/sense_and_sensibility_01_austen_64kb-0890.wav")


def peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def worker(spec_text: str, clips_json: str, threads: int) -> dict:
    spec = EngineSpec.parse(spec_text)
    clips = json.loads(Path(clips_json).read_text())
    make = RUNNERS[spec.kind]
    run, info = make(spec.options, threads)
    rss_loaded = peak_rss_mb()
    warmed = set()
    rows = []
    for clip in clips:
        audio = np.load(clip["path"])
        # Warm-up once per whole-second length: the first call at a new window size allocates.
        key = int(np.ceil(clip["seconds"]))
        if key not in warmed:
            run(audio, clip)
            warmed.add(key)
        c0, t0 = cpu_s(), time.perf_counter()
        text, extra = run(audio, clip)
        rows.append(
            {
                "condition": clip["condition"],
                "name": clip["name"],
                "group": clip["group"],
                "text": text,
                "cpu_ms": (cpu_s() - c0) * 1000,
                "wall_ms": (time.perf_counter() - t0) * 1000,
                **extra,
            }
        )
    return {
        "label": spec.label,
        "spec": spec_text,
        "info": info,
        "rss_after_load_mb": rss_loaded,
        "peak_rss_mb": peak_rss_mb(),
        "rows": rows,
    }


def run_worker(spec: str, clips_json: Path, threads: int, python: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO / "daemon"), "PYTHONMALLOC": "malloc"}
    p = subprocess.run(
        [python, "-m", "scripts.bench.asr", "--worker", spec, str(clips_json), str(threads)],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
    )
    if p.returncode != 0:
        raise RuntimeError(f"worker {spec!r} failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def cli_peak_rss(python: str) -> float:
    """Peak RSS (MB) of `voxnode transcribe` on a 5.3 s clip in a fresh child, as the daemon runs (malloc)."""
    probe = (
        "import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], capture_output=True); "
        "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    env = {**os.environ, "PYTHONMALLOC": "malloc", "PYTHONPATH": str(REPO / "daemon")}
    out = subprocess.run(
        [python, "-c", probe, python, "-m", "voxnode", "transcribe", str(FIVE_S_CLIP)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout.split()
    if out[0] != "0":
        raise RuntimeError("voxnode transcribe failed in the RSS probe")
    return int(out[1]) / 1024
