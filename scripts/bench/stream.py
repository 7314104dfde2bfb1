"""Streaming benchmark: N real-time microphones into one voxnode process.

Each stream is a real ALSA capture PCM (`type file` reading a FIFO); a separate
pacer process writes every FIFO one 20 ms period at a time, so the daemon
process sees N microphones and its CPU time is its own.  The daemon is the
real `Daemon` with the real Whisper engine shared by all streams.

Per run: an idle phase (room noise only) to measure idle CPU, then a speaking
phase: utterances (espeak-ng + pocketsphinx-testdata recordings, up to 7 s)
separated by 1.5-4 s pauses, different order per stream.

Reports: end of speech -> final latency p50/p95 (and per utterance length),
CPU % of one core per stream (idle, speaking), RSS, dropped frames, dropped
finals, skipped partials, WER (finals matched to reference utterances by time).

    PYTHONPATH=daemon python -m scripts.bench.stream --streams 1,4,10 [--speak-s 60] [--idle-s 15]
    PYTHONPATH=daemon python -m scripts.bench.stream --batching
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from scripts.bench import audio_corpus as ac
from scripts.bench import emulate_board

EMULATED_ENV = "VOXNODE_BENCH_BOARD"  # set in the re-run under scripts/bench/emulate_board.py

PACER = r"""
import os, sys, time, json
paths = sys.argv[1:]
data = [open(p + '.pcm', 'rb').read() for p in paths]
fds = [os.open(p, os.O_WRONLY) for p in paths]   # blocks until each capture has opened its PCM
t0 = time.monotonic(); w0 = time.time()
print(json.dumps({'t0_wall': w0}), flush=True)
n = max(len(d) for d in data) // 640
for i in range(n):
    for fd, d in zip(fds, data):
        chunk = d[i * 640:(i + 1) * 640]
        if len(chunk) == 640:
            os.write(fd, chunk)
    delay = t0 + (i + 1) * 0.02 - time.monotonic()
    if delay > 0:
        time.sleep(delay)
print(json.dumps({'done_wall': time.time()}), flush=True)
sys.stdin.read()   # keep the FIFOs open (EOF would feed ALSA stale data) until told to go
"""


def build_stream(clips, speak_s: float, idle_s: float, seed: int):
    """(audio, refs) with refs = [(start_s, end_s, text)] relative to the stream start."""
    rng = np.random.default_rng(seed)
    parts = [ac.silence(idle_s)]
    refs = []
    pos = idle_s
    order = rng.permutation(len(clips))
    k = 0
    while pos < idle_s + speak_s:
        clip = clips[order[k % len(clips)]]
        k += 1
        gap = rng.uniform(1.5, 4.0)
        parts.append(ac.silence(gap))
        pos += gap
        a = ac.at_dbfs(clip.audio, -26 + rng.uniform(-4, 4))
        lab = ac.label_speech(a)
        idx = np.nonzero(lab)[0]
        s0 = pos + idx[0] * 0.02
        s1 = pos + (idx[-1] + 1) * 0.02
        refs.append((s0, s1, clip.text))
        parts.append(a)
        pos += len(a) / ac.RATE
    parts.append(ac.silence(2.0))
    clean = np.concatenate(parts)
    room = ac.at_dbfs(ac.noise("pink", len(clean), seed=100 + seed), -62)
    return clean + room, refs


class ListSink:
    def __init__(self):
        self.events = []
        self.lock = threading.Lock()

    def emit(self, event):
        with self.lock:
            self.events.append((time.time(), event))

    def close(self):
        pass


def cpu_s() -> float:
    t = os.times()
    return t.user + t.system


def rss_mb() -> float:
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def thread_times() -> dict[str, tuple[float, int]]:
    """Per named thread: CPU seconds (schedstat) and voluntary context switches (its waits: wake-ups)."""
    out = {}
    for t in threading.enumerate():
        try:
            cpu_ns = int(Path(f"/proc/self/task/{t.native_id}/schedstat").read_text().split()[0])
            status = Path(f"/proc/self/task/{t.native_id}/status").read_text()
            out[t.name] = (cpu_ns / 1e9, int(status.split("\nvoluntary_ctxt_switches:")[1].split()[0]))
        except (OSError, ValueError, IndexError):
            continue
    return out


def run(n: int, speak_s: float, idle_s: float, engines: list, config_overrides: dict) -> dict:
    from scripts.bench.settings import apply_sets
    from voxnode.config import Config
    from voxnode.config.audio import StreamConfig
    from voxnode.daemon import Daemon, RunOptions

    work = Path(os.environ["VOXNODE_BENCH_DIR"])
    fifos = [str(work / f"s{i}.fifo") for i in range(n)]
    refs = json.loads((work / "refs.json").read_text())[:n]
    cfg = Config(streams=tuple(StreamConfig(name=f"s{i}", device=f"bench{i}") for i in range(n)))
    cfg = apply_sets(cfg, config_overrides)
    sink = ListSink()
    daemon = Daemon(cfg, [sink], RunOptions(), recognizers=engines)
    # A daemon thread: Ctrl-C or SIGTERM mid-run ends the process (and removes its folder) without waiting
    # for a daemon no one will stop; the pacer ends with the process (EOF on its stdin).
    th = threading.Thread(target=daemon.run, daemon=True)
    th.start()
    pacer = subprocess.Popen(
        [sys.executable, "-c", PACER, *fifos], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    t0_wall = json.loads(pacer.stdout.readline())["t0_wall"]
    t_start = time.monotonic()
    # Idle phase: skip the first 2 s (start-up), measure until the first utterance.
    time.sleep(2.0)
    c0, w0, th0 = cpu_s(), time.monotonic(), thread_times()
    time.sleep(max(0.5, idle_s - 2.5))
    idle_s_measured = time.monotonic() - w0
    idle_cpu = (cpu_s() - c0) / idle_s_measured
    idle_threads = {
        name: {"cpu_pct": round(100 * (cpu - th0[name][0]) / idle_s_measured, 3),
               "wakeups_per_s": round((waits - th0[name][1]) / idle_s_measured, 1)}
        for name, (cpu, waits) in thread_times().items() if name in th0 and cpu > th0[name][0]
    }  # fmt: skip
    c1, w1 = cpu_s(), time.monotonic()
    rss_samples = [rss_mb()]
    sampling = threading.Event()

    def sample_rss():
        while not sampling.wait(0.25):
            rss_samples.append(rss_mb())

    sampler = threading.Thread(target=sample_rss, daemon=True)
    sampler.start()
    pacer.stdout.readline()  # the pacer has written everything
    speak_cpu = (cpu_s() - c1) / (time.monotonic() - w1)
    time.sleep(1.5)  # last hangover + decode
    sampling.set()
    sampler.join()
    daemon.request_stop()
    time.sleep(0.3)
    pacer.stdin.close()  # the pacer closes the FIFOs: blocked ALSA reads return, captures see the stop
    pacer.wait(5)
    th.join(30)
    speech = daemon.recognition.stats()
    dropped_frames = sum(rt.source.ring.dropped for rt in daemon.streams)
    frames = sum(rt.source.stats.frames for rt in daemon.streams)

    finals = [(t, e) for t, e in sink.events if e["type"] == "final"]
    partials = [e for _, e in sink.events if e["type"] == "partial"]
    lat = np.array([e["latency_ms"] for _, e in finals]) if finals else np.array([np.nan])
    # Match finals to references by time overlap, per stream.
    from datetime import datetime

    from voxnode.asr.wer import word_errors

    def ts(s):
        return datetime.fromisoformat(s).timestamp()

    errs = words = 0
    matched = 0
    by_len = {"<=3s": [], "3-8s": []}
    extra = 0
    for i in range(n):
        fs = [e for _, e in finals if e["stream"] == f"s{i}"]
        used = set()
        for s0, s1, text in refs[i]:
            a0, a1 = t0_wall + s0, t0_wall + s1
            hyp = [k for k, e in enumerate(fs) if ts(e["end"]) > a0 - 0.5 and ts(e["start"]) < a1 + 0.5]
            used.update(hyp)
            htext = " ".join(fs[k]["text"] for k in hyp)
            e_, w_ = word_errors(text, htext)  # voxnode.asr.wer: same normalisation as bench_asr
            errs += e_
            words += w_
            if hyp:
                matched += 1
                for k in hyp:
                    by_len["<=3s" if s1 - s0 <= 3 else "3-8s"].append(fs[k]["latency_ms"])
        extra += len(set(range(len(fs))) - used)
        for k in set(range(len(fs))) - used:
            errs += len(fs[k]["text"].split())
    n_refs = sum(len(r) for r in refs)
    return {
        "streams": n,
        "utterances": n_refs,
        "finals": len(finals),
        "matched": matched,
        "extra_finals": extra,
        "partials": len(partials),
        "latency_p50_ms": float(np.nanpercentile(lat, 50)),
        "latency_p95_ms": float(np.nanpercentile(lat, 95)),
        "latency_max_ms": float(np.nanmax(lat)),
        "latency_by_len": {
            k: (float(np.percentile(v, 50)), float(np.percentile(v, 95)), len(v)) for k, v in by_len.items() if v
        },
        "wer": errs / max(1, words),
        "cpu_idle_pct_per_stream": 100 * idle_cpu / n,
        "idle_threads": idle_threads,  # % of one host core and wake-ups a second, per thread
        "cpu_speaking_pct_per_stream": 100 * speak_cpu / n,
        "cpu_total_speaking_pct": 100 * speak_cpu,
        "rss_max_mb": max(rss_samples),  # sampled every 250 ms while the streams run
        "rss_start_mb": rss_samples[0],
        "frames": frames,
        "dropped_frames": dropped_frames,
        "finals_dropped": speech["scheduler"]["finals_dropped"],
        "finals_lost": sum(s["finals_lost"] for s in speech["streams"].values()),
        "partials_skipped": speech["scheduler"]["partials_skipped"],
        "engine_busy_pct": 100 * speech["scheduler"]["busy_s"] / (time.monotonic() - t_start),
        "speculative_hits": sum(s["speculative_hits"] for s in speech["streams"].values()),
        "engine_timings_ms": speech["scheduler"].get("timings_ms"),
        "suppressed": sum(s["suppressed"] for s in speech["streams"].values()),
    }


def batching(engine) -> None:
    """Can batching encoder work help? The exported encoder is batch-1 (its outputs
    have no batch axis), so measure the closest proxy: does one longer window
    cost less than the same audio in shorter windows (fixed per-call overhead),
    and how do 1 vs 2 threads scale (spare cores)?"""
    from voxnode.asr.mel import LogMel

    enc = engine._encoder
    mel = LogMel(80)
    for secs in (10, 20, 30):
        m = mel(
            np.zeros(secs * ac.RATE, np.float32)
            + np.random.default_rng(0).standard_normal(secs * ac.RATE).astype(np.float32) * 0.01
        )
        m = m[: 2 * (len(m) // 2)]
        enc.run(m)
        ts = []
        for _ in range(5):
            t = time.perf_counter()
            enc.run(m)
            ts.append(time.perf_counter() - t)
        print(
            f"encoder {secs:2d} s window: median {1e3 * np.median(ts):6.1f} ms  "
            f"({1e3 * np.median(ts) / secs:5.1f} ms per s)"
        )


def prepare(work: Path, n: int, speak_s: float, idle_s: float) -> None:
    clips = ac.espeak_clips() + ac.recorded_clips()
    refs = []
    for i in range(n):
        audio, r = build_stream(clips, speak_s, idle_s, seed=i)
        p = work / f"s{i}.fifo"
        if not p.exists():
            os.mkfifo(p)
        Path(str(p) + ".pcm").write_bytes(ac.to_pcm16(audio))
        refs.append(r)
    (work / "refs.json").write_text(json.dumps(refs))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--prepare":
        prepare(Path(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--streams", default="1,4,10")
    ap.add_argument("--speak-s", type=float, default=60.0)
    ap.add_argument("--idle-s", type=float, default=12.0)
    ap.add_argument("--threads", type=int, default=2, help="inference threads per engine")
    ap.add_argument("--engines", type=int, default=1, help="engine instances (use with --set stream.decode_workers=N)")
    ap.add_argument("--set", action="append", default=[], help="section.key=value (ints/floats/bools)")
    ap.add_argument("--batching", action="store_true")
    ap.add_argument("--json", help="append results to this file")
    ap.add_argument(
        "--board",
        default="x86",
        choices=sorted(emulate_board.BOARDS),
        help="run the whole benchmark as this board (scripts/bench/emulate_board.py; the pacer's few writes "
        "per 20 ms fit any board); CPU is also given in that board's cores",
    )
    args = ap.parse_args()
    from scripts.bench.settings import parse_sets

    overrides = parse_sets(args.set)  # checked by the config loader before anything starts
    board = emulate_board.BOARDS[args.board]
    if board.fraction is not None and os.environ.get(EMULATED_ENV) != args.board:
        # Re-run this command under the emulation (the daemon runs in this process).
        os.environ[EMULATED_ENV] = args.board
        cmd = [*emulate_board.argv_prefix(args.board), sys.executable, "-m", "scripts.bench.stream", *sys.argv[1:]]
        os.execv(cmd[0], cmd)
    # The FIFOs and the test audio go on every way out: a result, an error, Ctrl-C or SIGTERM (66 of these
    # folders, each with its streams' audio, had piled up in /tmp on stop 38's host).
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    with tempfile.TemporaryDirectory(prefix="voxnode-bench-") as work:
        bench(args, overrides, Path(work))


def bench(args: argparse.Namespace, overrides: dict, work: Path) -> None:
    """The benchmark in `work`: its PCMs and FIFOs, the streams' audio, the engines, then a run per count."""
    from scripts.bench.settings import apply_sets

    counts = [int(x) for x in args.streams.split(",")]
    board = emulate_board.BOARDS[args.board]
    os.environ["VOXNODE_BENCH_DIR"] = str(work)
    # The test audio is made in a child process, so its buffers do not count
    # in this (the daemon's) process's memory. It runs before XDG_CONFIG_HOME points into the folder: its
    # espeak-ng children start libpulse, which puts a pulse/*-runtime link there, and one still running
    # when an interrupted run had removed the folder made it again (at load 3, 5 of 6 interrupted runs
    # left it, tests/bench/test_stream_folder.py). And it is stopped before the folder goes.
    from voxnode.process_stop import stop_process

    cmd = [sys.executable, "-m", "scripts.bench.stream", "--prepare", str(work), str(max(counts))]
    prepare = subprocess.Popen([*cmd, str(args.speak_s), str(args.idle_s)])
    try:
        if prepare.wait() != 0:
            raise subprocess.CalledProcessError(prepare.returncode, prepare.args)
    finally:
        stop_process(prepare, 5)
    (work / "alsa").mkdir()
    conf = "".join(
        f'pcm.bench{i} {{\n type file\n slave.pcm "null"\n file "/dev/null"\n'
        f' infile "{work}/s{i}.fifo"\n format "raw"\n}}\n'
        for i in range(max(counts))
    )
    (work / "alsa" / "asoundrc").write_text(conf)
    os.environ["XDG_CONFIG_HOME"] = str(work)  # before alsa-lib reads its configuration

    from voxnode.asr import default_model_dir
    from voxnode.asr.whisper.engine import WhisperEngine
    from voxnode.asr.whisper.options import DecodeOptions
    from voxnode.config import Config

    # [asr] overrides (beam_size, min_window_s, ...) reach the engines, the others the daemon.
    options = DecodeOptions.from_config(apply_sets(Config(), {"asr": overrides.pop("asr", {})}).asr)
    engines = [WhisperEngine.load(default_model_dir(), args.threads, options=options) for _ in range(args.engines)]
    if args.batching:
        batching(engines[0])
        return
    for n in counts:
        res = run(n, args.speak_s, args.idle_s, engines, overrides)
        res["settings"] = args.set
        res["board"] = args.board
        res["board_fraction"] = board.fraction  # the stock table's, or this host's (EMULATE_BOARD_FRACTIONS)
        res["threads"] = args.threads
        # What produced the row and under what load, for docs/benchmarks.md.
        res["command"] = " ".join([".venv/bin/python", "-m", "scripts.bench.stream", *sys.argv[1:]])
        res["finished"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        res["loadavg"] = Path("/proc/loadavg").read_text().split()[:3]
        if board.fraction is not None:
            # One board core = `fraction` of a host core.
            for key in ("cpu_idle_pct_per_stream", "cpu_speaking_pct_per_stream", "cpu_total_speaking_pct"):
                res[key + "_of_board_core"] = round(res[key] / board.fraction, 1)
        print(json.dumps(res), flush=True)
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps(res) + "\n")


if __name__ == "__main__":
    main()
