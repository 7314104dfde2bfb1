"""Wyoming clients against a microphone (issue 27, docs/reliability.md): N clients upload 29 s
requests back to back (wyoming's own client, each request on a new connection, sent in one burst)
while a microphone speaks a real recorded utterance (pocketsphinx-testdata) every few seconds.

A real `voxnode run --stdout` with the Wyoming server on and the microphone an ALSA `type file` PCM
reading a FIFO fed in real time (mic_daemon.py). Measured: end of speech (the utterance's last
period written, quiet ends trimmed) -> the microphone's final line on stdout; each request's
audio-stop -> transcript; the daemon's RSS (VmRSS every 0.5 s: peak and p95, and VmHWM) against
the shipped unit's MemoryHigh (systemd/voxnode.service); the load average at start and end.

    make probe-wyoming-fairness      # .venv/bin/python -m scripts.bench.probe_wyoming_fairness \
                                     #     --clients 8 --duration 120 \
                                     #     --json scripts/bench/results/wyoming_fairness_probe.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from scripts import REPO, command_line
from scripts.bench import speech_corpus as sc
from scripts.bench.mic_daemon import (
    MicDaemon,
    RssSampler,
    Speaker,
    back_to_back,
    finals_summary,
    load,
    match_finals,
    trim,
)
from scripts.bench.wyoming_client import pcm

UNIT = REPO / "systemd" / "voxnode.service"


def memory_high_mb() -> float:
    """The shipped unit's MemoryHigh, MB (the value the probe's RSS is held to)."""
    m = re.search(r"^MemoryHigh=(\d+)M$", UNIT.read_text(), re.M)
    assert m, f"no MemoryHigh=<n>M in {UNIT}"
    return float(m.group(1))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--duration", type=float, default=120.0)
    ap.add_argument("--request-s", type=float, default=29.0)
    ap.add_argument("--gap-s", type=float, default=4.0, help="mic silence between utterances")
    ap.add_argument("--drain-s", type=float, default=240.0)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    load_start = load()

    utts = sc.pocketsphinx()
    clips = [(u.text, trim(u.audio)) for u in utts if 1.5 <= len(u.audio) / 16000 <= 6][:12]
    reqs = []
    for c in range(a.clients):
        parts, n = [], 0
        i = c
        while n < a.request_s * 16000:
            x = utts[i % len(utts)].audio
            parts.append(x)
            n += len(x)
            i += 3
        reqs.append(pcm(np.concatenate(parts)[: int(a.request_s * 16000)]))

    work = Path(tempfile.mkdtemp(prefix="sched-probe-"))
    d = MicDaemon(work, python=sys.executable, max_clients=max(8, a.clients), idle_timeout_s=600)
    time.sleep(2)
    rss = RssSampler(d.proc.pid).start()
    t_start = time.time()
    speaker = Speaker(d, clips, a.gap_s).start()
    wy: list[dict] = []
    lock = threading.Lock()

    def answered(k: int):
        def record(ex, started: float) -> None:
            with lock:
                wy.append(
                    {
                        "client": k,
                        "t": round(started - t_start, 1),
                        "stop_to_transcript_s": ex.stop_to_transcript_s,
                        "error": ex.error,
                        "ok": bool(ex.text),
                    }
                )

        return record

    async def clients() -> None:
        t_end = t_start + a.duration
        await asyncio.gather(
            *(back_to_back(d.port, reqs[k], lambda: time.time() >= t_end, answered(k)) for k in range(a.clients))
        )

    if a.clients:
        asyncio.run(clients())
    else:
        time.sleep(a.duration)
    speaker.stop()
    t_clients_done = time.time() - t_start
    load_clients_done = load()
    d.wait_finals(len(speaker.spoken), a.drain_s)
    memory = rss.stop()
    hwm = d.rss_mb()["VmHWM"]
    d.stop()

    lat = match_finals(speaker.spoken, clips, d.finals, t_start)
    mic = finals_summary(speaker.spoken, clips, d.finals, lat)
    w = [r["stop_to_transcript_s"] for r in wy if r["stop_to_transcript_s"] is not None]
    high = memory_high_mb()
    out = {
        "clients": a.clients,
        "duration_s": a.duration,
        "request_s": a.request_s,
        "utterances": mic["utterances"],
        "mic_finals": mic["finals"],
        "matched": mic["matched"],
        "mic_wer": mic["wer"],
        "mic_latency_p50_s": mic["latency_p50_s"],
        "mic_latency_p95_s": mic["latency_p95_s"],
        "mic_latency_max_s": mic["latency_max_s"],
        "wyoming_requests": len(wy),
        "wyoming_errors": sum(1 for r in wy if r["error"]),
        "wyoming_stop_to_transcript_p50_s": round(float(np.percentile(w, 50)), 2) if w else None,
        "wyoming_stop_to_transcript_p95_s": round(float(np.percentile(w, 95)), 2) if w else None,
        "clients_done_at_s": round(t_clients_done, 1),
        "rss": {**memory, "vmhwm_mb": hwm, "unit_memory_high_mb": high, "within_memory_high": hwm <= high},
        "loadavg_start": load_start,
        "loadavg_clients_done": load_clients_done,
        "loadavg_end": load(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores (shared)",
        "command": command_line(),
        "finished": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "mic": lat,
    }
    print(json.dumps({k: v for k, v in out.items() if k != "mic"}, indent=1))
    for x in lat:
        print(x)
    if a.json:
        a.json.write_text(json.dumps(out, indent=1) + "\n")
        print("written to", a.json)
    print("log:", d.log_path)


if __name__ == "__main__":
    main()
