"""Whisper tiny.en vs base on this machine: file sizes, XNNPACK coverage, encode + decode time of a
5.3 s clip with 1 and 2 threads, and the peak RSS of `voxnode transcribe` (docs/asr.md, "Whisper base
and languages").

Runtime venv only:

    .venv/bin/python -m scripts.bench.models [--runs 5] [--json out.json]

Timings: WhisperEngine.transcribe of the clip as a final (the [asr] defaults: beam 3, 6 s window)
and as a partial (greedy), after one warm-up call; median of --runs calls: the engine's wall-time
encode_ms/decode_ms (noisy on a shared machine) and the call's CPU time (all threads).
RSS: `voxnode transcribe CLIP` in a fresh child with the model chosen by `[asr] model`,
PYTHONMALLOC=malloc as the daemon runs; ru_maxrss of that child.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLIP = Path("/usr/share/pocketsphinx/test/data/librivox/sense_and_sensibility_01_austen_64kb-0890.wav")
MODELS = ("tiny.en", "base")


def timings(model: str, threads: int, runs: int) -> dict:
    from voxnode.asr import default_model_dir
    from voxnode.asr.whisper.engine import WhisperEngine
    from voxnode.audio.wavfile import read_audio

    engine = WhisperEngine.load(default_model_dir(None, model), num_threads=threads)
    audio = read_audio(CLIP)
    out: dict = {"xnnpack_all_ops": engine.info.fully_accelerated, "ops_total": engine.info.ops_total}
    for role in ("final", "partial"):
        engine.transcribe(audio, role=role)  # warm-up: shapes allocated, weights packed
        rs, cpu = [], []
        for _ in range(runs):
            c0 = time.process_time()
            rs.append(engine.transcribe(audio, role=role))
            cpu.append((time.process_time() - c0) * 1000)
        out[role] = {
            "encode_ms": round(statistics.median(r.encode_ms for r in rs), 1),
            "decode_ms": round(statistics.median(r.decode_ms for r in rs), 1),
            "total_ms": round(statistics.median(r.encode_ms + r.decode_ms for r in rs), 1),
            # CPU time of the whole call, all threads: less inflated than wall time on a shared machine
            "cpu_ms": round(statistics.median(cpu), 1),
            "tokens": len(rs[0].tokens),
            "text": rs[0].text,
        }
    return out


def cli_peak_rss_mb(model: str) -> float:
    with tempfile.NamedTemporaryFile("w", suffix=".toml") as cfg:
        cfg.write(f'[asr]\nmodel = "{model}"\n')
        cfg.flush()
        probe = (
            "import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], capture_output=True); "
            "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
        )
        env = {**os.environ, "PYTHONMALLOC": "malloc"}
        cmd = [sys.executable, "-m", "voxnode", "transcribe", "--config", cfg.name, str(CLIP)]
        rc, kb = subprocess.run(
            [sys.executable, "-c", probe, *cmd], capture_output=True, text=True, env=env, check=True
        ).stdout.split()
    if rc != "0":
        raise RuntimeError(f"voxnode transcribe failed for {model}")
    return round(int(kb) / 1024, 1)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    from voxnode.asr import default_model_dir

    report: dict = {"clip": str(CLIP), "cpus": os.cpu_count(), "models": {}}
    for model in MODELS:
        d = default_model_dir(None, model)
        sizes = {f.name: f.stat().st_size for f in sorted(d.glob("*")) if f.is_file()}
        entry: dict = {
            "files_mb": round(sum(sizes.values()) / 1e6, 1),
            "encoder_mb": round(sizes["encoder.int8.tflite"] / 1e6, 1),
            "decoder_mb": round(sizes["decoder.int8.tflite"] / 1e6, 1),
        }
        for threads in args.threads:
            # each in a child, so that one model's memory and warm state do not colour the other's
            child = subprocess.run(
                [sys.executable, "-m", "scripts.bench.models", "--child", model, str(threads), str(args.runs)],
                capture_output=True,
                text=True,
                check=True,
            )
            entry[f"threads_{threads}"] = json.loads(child.stdout.strip().splitlines()[-1])
        entry["voxnode_transcribe_peak_rss_mb"] = cli_peak_rss_mb(model)
        report["models"][model] = entry
        print(json.dumps({model: entry}, indent=2, ensure_ascii=False), flush=True)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        result = timings(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
        result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        print(json.dumps(result, ensure_ascii=False))
        sys.exit(0)
    sys.exit(main())
