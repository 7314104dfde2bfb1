#!/usr/bin/env python3
"""Wyoming clients against a microphone (issue 27, docs/reliability.md): N clients upload 29 s
requests back to back (wyoming's own client, each request on a new connection, sent in one burst)
while a microphone speaks a real recorded utterance (pocketsphinx-testdata) every few seconds.

A real `voxnode run --stdout` with the Wyoming server on and the microphone an ALSA `type file` PCM
reading a FIFO fed in real time (tests/ha/live_fifo.py). Measured: end of speech (the utterance's
last period written, quiet ends trimmed) -> the microphone's final line on stdout; each request's
audio-stop -> transcript; the daemon's RSS (sampled every second).

    make probe-wyoming-fairness      # .venv/bin/python scripts/probe_wyoming_fairness.py --clients 8 --duration 120
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT))  # tests/ha/live_fifo.py
import speech_corpus as sc  # noqa: E402
from wyoming_client import pcm, transcribe  # noqa: E402

from tests.ha.live_fifo import LiveFifo, asoundrc  # noqa: E402
from voxnode.mqtt.localbroker import free_port  # noqa: E402


def trim(audio: np.ndarray) -> np.ndarray:
    """Cut trailing/leading quiet (20 ms frames under -40 dBFS) so the clip's end is the speech end."""
    f = 320
    n = len(audio) // f
    rms = np.sqrt(np.mean((audio[: n * f].astype(np.float64) / 32768.0).reshape(n, f) ** 2, axis=1) + 1e-12)
    loud = np.nonzero(20 * np.log10(rms) > -40)[0]
    return audio[max(0, loud[0] - 5) * f : (loud[-1] + 1) * f]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--duration", type=float, default=120.0)
    ap.add_argument("--request-s", type=float, default=29.0)
    ap.add_argument("--gap-s", type=float, default=4.0, help="mic silence between utterances")
    ap.add_argument("--drain-s", type=float, default=240.0)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    load_start = Path("/proc/loadavg").read_text().split()[:3]

    utts = sc.pocketsphinx()
    mic_clips = [trim(u.audio) for u in utts if 1.5 <= len(u.audio) / 16000 <= 6][:12]
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
    (work / "alsa").mkdir()
    mic = LiveFifo(work / "mic.fifo")
    (work / "alsa" / "asoundrc").write_text(asoundrc({"probe_mic": mic.path}))
    port = free_port()
    cfg = work / "c.toml"
    cfg.write_text(
        f'[audio]\ndevice = "probe_mic"\n[wyoming]\nenabled = true\nhost = "127.0.0.1"\nport = {port}\n'
        f"max_clients = {max(8, a.clients)}\nidle_timeout_s = 600\n"
    )
    env = {**os.environ, "XDG_CONFIG_HOME": str(work), "PYTHONMALLOC": "malloc"}
    log = open(work / "daemon.log", "w")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "voxnode", "run", "--config", str(cfg), "--stdout"],
        stdout=subprocess.PIPE,
        stderr=log,
        env=env,
        text=True,
        cwd=ROOT,
    )
    finals: list[tuple[float, dict]] = []
    rss: list[int] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("type") == "final":
                finals.append((time.time(), e))

    threading.Thread(target=read, daemon=True).start()
    deadline = time.monotonic() + 90
    while "speech-to-text server on" not in (work / "daemon.log").read_text():
        assert proc.poll() is None and time.monotonic() < deadline, (work / "daemon.log").read_text()[-3000:]
        time.sleep(0.2)
    time.sleep(2)

    def sample_rss() -> None:
        while proc.poll() is None:
            try:
                for ln in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
                    if ln.startswith("VmRSS"):
                        rss.append(int(ln.split()[1]) // 1024)
            except OSError:
                return
            time.sleep(1)

    threading.Thread(target=sample_rss, daemon=True).start()

    ends: list[float] = []
    stop = threading.Event()
    t_start = time.time()

    def speak() -> None:
        i = 0
        while not stop.is_set():
            clip = mic_clips[i % len(mic_clips)]
            done = mic.say(clip.astype("<i2").tobytes())
            done.wait(30)
            ends.append(time.time())
            i += 1
            stop.wait(a.gap_s)

    wy: list[dict] = []

    async def client(k: int) -> None:
        t_end = t_start + a.duration
        while time.time() < t_end:
            t0 = time.time()
            ex = await transcribe(port, reqs[k], timeout=600)
            wy.append(
                {
                    "client": k,
                    "t": round(t0 - t_start, 1),
                    "stop_to_transcript_s": ex.stop_to_transcript_s,
                    "error": ex.error,
                    "ok": bool(ex.text),
                }
            )

    async def clients() -> None:
        await asyncio.gather(*(client(k) for k in range(a.clients)))

    sp = threading.Thread(target=speak, daemon=True)
    sp.start()
    if a.clients:
        asyncio.run(clients())
    else:
        time.sleep(a.duration)
    stop.set()
    sp.join(40)
    t_clients_done = time.time() - t_start
    # Wait for the mic's finals to arrive.
    dl = time.monotonic() + a.drain_s
    while time.monotonic() < dl:
        if len(finals) >= len(ends) and (not finals or time.time() - finals[-1][0] > 5):
            break
        time.sleep(0.5)
    proc.terminate()
    proc.wait(60)
    mic.stop()

    lat = []
    used = set()
    for arr, e in finals:
        fend = datetime.fromisoformat(e["end"]).timestamp()
        j = min(range(len(ends)), key=lambda j: abs(ends[j] - fend)) if ends else None
        if j is None or abs(ends[j] - fend) > 2.0 or j in used:
            continue
        used.add(j)
        lat.append(
            {
                "utt": j,
                "t": round(ends[j] - t_start, 1),
                "latency_s": round(arr - ends[j], 3),
                "daemon_latency_ms": e.get("latency_ms"),
                "text": e["text"],
            }
        )
    ls = [x["latency_s"] for x in lat]
    w = [r["stop_to_transcript_s"] for r in wy if r["stop_to_transcript_s"] is not None]
    out = {
        "clients": a.clients,
        "duration_s": a.duration,
        "request_s": a.request_s,
        "utterances": len(ends),
        "mic_finals": len(finals),
        "matched": len(lat),
        "mic_latency_p50_s": round(float(np.percentile(ls, 50)), 3) if ls else None,
        "mic_latency_p95_s": round(float(np.percentile(ls, 95)), 3) if ls else None,
        "mic_latency_max_s": round(max(ls), 3) if ls else None,
        "wyoming_requests": len(wy),
        "wyoming_errors": sum(1 for r in wy if r["error"]),
        "wyoming_stop_to_transcript_p50_s": round(float(np.percentile(w, 50)), 2) if w else None,
        "wyoming_stop_to_transcript_p95_s": round(float(np.percentile(w, 95)), 2) if w else None,
        "clients_done_at_s": round(t_clients_done, 1),
        "rss_max_mb": max(rss) if rss else None,
        "loadavg_start": load_start,
        "loadavg_end": Path("/proc/loadavg").read_text().split()[:3],
        "command": " ".join(sys.argv),
        "finished": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "mic": lat,
    }
    print(json.dumps({k: v for k, v in out.items() if k != "mic"}, indent=1))
    for x in lat:
        print(x)
    if a.json:
        a.json.write_text(json.dumps(out, indent=1))
    print("log:", work / "daemon.log")


if __name__ == "__main__":
    main()
