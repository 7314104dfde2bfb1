"""Wyoming server under abuse and load (issue 27 item 2): the daemon's RSS and whether a legitimate
client is still served.

A real `voxnode run` (no microphone, [wyoming] on, the shipped defaults otherwise) per probe, in a
subprocess with PYTHONMALLOC=malloc as the unit runs it; raw sockets and wyoming's own client here;
RSS read from /proc/<pid>/status (VmRSS now, VmHWM = peak) before and after each probe.

- describe: one connection sends `--describes` describe events and never reads the replies.
- unfinished: one connection opens `--unfinished` requests (transcribe + audio-start, no audio).
- idle: `--idle` connections, 8 of them sending a ping every 20 s, the rest silent.
- sequential: `--sequential` requests of 29 s of real speech, one after the other (burst upload).
- concurrent: `--clients` (8) at once, each sending 29 s requests back to back for `--rounds` rounds.
- malformed: deep JSON, a 5,000-digit integer, a non-string language: an `error` event each.
- shutdown: SIGTERM while a request's audio is arriving: no "Event loop is closed", exit 0.

During describe / unfinished / idle a legitimate client sends a 3 s clip; its connect -> transcript
time is reported (target: served within 2 s, i.e. not refused and not queued behind the abuse).

    .venv/bin/python -m scripts.bench.wyoming_limits --write scripts/bench/results/wyoming_limits_benchmark.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import resource
import signal
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from scripts import REPO, command_line
from scripts.bench.mic_daemon import proc_cpu_s as cpu_s
from scripts.bench.mic_daemon import proc_rss_mb as rss_mb
from scripts.bench.wyoming_client import WyomingDaemon, clip, pcm, transcribe

PYTHON = str(REPO / ".venv" / "bin" / "python")


async def settle(pid: int, quiet_s: float = 2.0, timeout: float = 300.0) -> float:
    """Wait until the daemon's CPU use stops (it has worked through what was sent); seconds waited."""
    t0 = time.monotonic()
    last, still = cpu_s(pid), 0.0
    while time.monotonic() - t0 < timeout:
        await asyncio.sleep(0.5)
        now = cpu_s(pid)
        still = still + 0.5 if now - last < 0.02 else 0.0
        last = now
        if still >= quiet_s:
            break
    return round(time.monotonic() - t0 - still, 1)


async def legit(port: int) -> dict:
    text, audio = clip("005")
    t0 = time.monotonic()
    try:
        ex = await asyncio.wait_for(transcribe(port, pcm(audio)), 60)
    except (TimeoutError, ConnectionError, OSError) as e:
        return {"served": False, "why": type(e).__name__, "s": round(time.monotonic() - t0, 2)}
    return {"served": ex.error is None and bool(ex.text), "error": ex.error, "s": round(time.monotonic() - t0, 2)}


async def send_lines(port: int, line: bytes, n: int, batch: int = 1000) -> tuple:
    """Write `n` copies of `line` without reading; stop when the server stops reading (10 s stalled)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    sent = 0
    try:
        while sent < n:
            k = min(batch, n - sent)
            writer.write(line * k)
            await asyncio.wait_for(writer.drain(), 10)
            sent += k
    except (TimeoutError, ConnectionError, OSError):
        pass
    return reader, writer, sent


async def probe_describe(d: WyomingDaemon, n: int) -> dict:
    await legit(d.port)  # warm-up: the engine's first decode allocates its working memory
    before = rss_mb(d.proc.pid)
    reader, writer, sent = await send_lines(d.port, b'{"type": "describe"}\n', n)
    busy_s = await settle(d.proc.pid)
    during = rss_mb(d.proc.pid)
    served = await legit(d.port)
    t0 = time.monotonic()
    while "read none of its replies" not in d.log() and time.monotonic() - t0 < 30:
        await asyncio.sleep(0.5)
    writer.close()
    return {
        "sent": sent,
        "of": n,
        "busy_s": busy_s,
        "rss_before": before,
        "rss_after": during,
        "legit": served,
        "disconnected_for_not_reading": "read none of its replies" in d.log(),
    }


async def probe_unfinished(d: WyomingDaemon, n: int) -> dict:
    await legit(d.port)  # warm-up: the engine's first decode allocates its working memory
    before = rss_mb(d.proc.pid)
    pair = b'{"type": "transcribe", "data": {"language": "en"}}\n'
    pair += b'{"type": "audio-start", "data": {"rate": 16000, "width": 2, "channels": 1}}\n'
    c0 = cpu_s(d.proc.pid)
    flood = asyncio.create_task(send_lines(d.port, pair, n, batch=200))
    await asyncio.sleep(1.0)
    served = await legit(d.port)  # while the flood is being read
    reader, writer, sent = await flood
    busy_s = await settle(d.proc.pid)
    cpu = cpu_s(d.proc.pid) - c0
    after = rss_mb(d.proc.pid)
    writer.close()
    return {
        "sent": sent,
        "of": n,
        "busy_s": busy_s,
        "cpu_ms_per_request": round(cpu / max(1, sent) * 1e3, 3),
        "rss_before": before,
        "rss_after": after,
        "legit": served,
    }


async def probe_idle(d: WyomingDaemon, n: int, watch_s: float) -> dict:
    await legit(d.port)  # warm-up: the engine's first decode allocates its working memory
    before = rss_mb(d.proc.pid)
    conns = []
    for _ in range(n):
        try:
            conns.append(await asyncio.open_connection("127.0.0.1", d.port))
        except OSError:
            break

    async def pinger(writer: asyncio.StreamWriter) -> None:
        while True:
            writer.write(b'{"type": "ping", "data": {}}\n')
            await asyncio.sleep(20)

    pingers = [asyncio.create_task(pinger(w)) for _, w in conns[:8]]
    await asyncio.sleep(1.0)
    tries = []
    t_end = time.monotonic() + watch_s
    while time.monotonic() < t_end:
        tries.append(await legit(d.port))
        await asyncio.sleep(5)
    after = rss_mb(d.proc.pid)
    closed_by_server = 0
    for r, _ in conns:
        try:
            closed_by_server += b"busy" in await asyncio.wait_for(r.read(65536), 0.05)
        except (TimeoutError, ConnectionError):
            pass
    for t in pingers:
        t.cancel()
    for _, w in conns:
        w.close()
    return {
        "connections": len(conns),
        "closed_to_make_room": closed_by_server,
        "rss_before": before,
        "rss_after": after,
        "legit_served": sum(t["served"] for t in tries),
        "legit_tries": len(tries),
        "legit_s_max": max(t["s"] for t in tries),
        "legit": tries[:3],
    }


def speech_29s() -> bytes:
    """29 s of real speech: five pocketsphinx recordings (24.7 s) and the first of them again."""
    parts = [clip(name)[1] for name in ("0870", "0880", "0890", "0920", "0930", "0870")]
    return pcm(np.concatenate(parts)[: 29 * 16000])


async def probe_sequential(d: WyomingDaemon, n: int) -> dict:
    data = speech_29s()
    before = rss_mb(d.proc.pid)
    curve, errors = [], 0
    for _ in range(n):
        ex = await transcribe(d.port, data, timeout=120)
        errors += ex.error is not None
        curve.append(rss_mb(d.proc.pid)["VmRSS"])
    return {"requests": n, "errors": errors, "rss_before": before, "rss_after": rss_mb(d.proc.pid), "rss_curve": curve}


async def probe_concurrent(d: WyomingDaemon, clients: int, rounds: int, pace: bool) -> dict:
    data = speech_29s()
    before = rss_mb(d.proc.pid)
    peak = [0.0]
    stop = asyncio.Event()

    async def watch() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], rss_mb(d.proc.pid)["VmRSS"])
            await asyncio.sleep(0.2)

    async def client() -> list:
        return [await transcribe(d.port, data, pace=pace, timeout=300) for _ in range(rounds)]

    w = asyncio.create_task(watch())
    results = await asyncio.gather(*(client() for _ in range(clients)))
    stop.set()
    await w
    exs = [ex for r in results for ex in r]
    return {
        "clients": clients,
        "rounds": rounds,
        "paced": pace,
        "errors": [ex.error["code"] for ex in exs if ex.error],
        "rss_before": before,
        "rss_peak_sampled": peak[0],
        "rss_after": rss_mb(d.proc.pid),
        "stop_to_transcript_s_max": max((ex.stop_to_transcript_s or 0.0) for ex in exs),
    }


async def probe_malformed(d: WyomingDaemon) -> dict:
    cases = {
        "deep_json": b'{"type": "describe", "data": ' + b'{"a": ' * 5000 + b"1" + b"}" * 5001 + b"\n",
        "big_int": b'{"type": "audio-chunk", "payload_length": ' + b"9" * 5000 + b"}\n",
        "language_not_string": b'{"type": "transcribe", "data": {"language": 5}}\n',
        "language_list": b'{"type": "transcribe", "data": {"language": ["en"]}}\n',
        "rate_big_int": b'{"type": "audio-start", "data": {"rate": ' + b"9" * 5000 + b', "width": 2, "channels": 1}}\n',
    }
    out = {}
    for name, line in cases.items():
        reader, writer = await asyncio.open_connection("127.0.0.1", d.port)
        writer.write(line)
        await writer.drain()
        got = b""
        try:
            while chunk := await asyncio.wait_for(reader.read(65536), 10):
                got += chunk
        except (TimeoutError, ConnectionError):
            pass
        writer.close()
        first = got.split(b"\n", 1)[0]
        try:
            out[name] = json.loads(first).get("type")
        except ValueError:
            out[name] = None
    log = d.log()
    return {"first_event": out, "tracebacks": log.count("Traceback")}


async def probe_shutdown(d: WyomingDaemon) -> dict:
    _, audio = clip("0870")
    task = asyncio.create_task(transcribe(d.port, pcm(audio), pace=True))
    await asyncio.sleep(2.0)
    d.proc.send_signal(signal.SIGTERM)
    try:
        await asyncio.wait_for(task, 30)
    except Exception:  # noqa: BLE001, S110 - the request may be cut; what counts is the daemon's exit
        pass
    code = d.stop()
    log = d.log()
    closed = log.count("Event loop is closed")
    return {"exit": code, "event_loop_is_closed": closed, "destroyed_pending": log.count("destroyed but it is pending")}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--describes", type=int, default=100_000)
    p.add_argument("--unfinished", type=int, default=20_000)
    p.add_argument("--idle", type=int, default=200)
    p.add_argument("--idle-watch-s", type=float, default=30.0)
    p.add_argument("--sequential", type=int, default=20)
    p.add_argument("--clients", type=int, default=8, help="concurrent clients")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--pace", action="store_true", help="concurrent clients send in real time (as satellites)")
    p.add_argument("--only", nargs="*", help="probes to run (default: all)")
    p.add_argument("--write", metavar="JSON")
    args = p.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    out: dict = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": platform.machine(),
        "command": command_line(),
        "load_1m_at_start": round(os.getloadavg()[0], 2),
    }
    probes = {
        "describe": lambda d: probe_describe(d, args.describes),
        "unfinished": lambda d: probe_unfinished(d, args.unfinished),
        "idle": lambda d: probe_idle(d, args.idle, args.idle_watch_s),
        "malformed": probe_malformed,
        "sequential": lambda d: probe_sequential(d, args.sequential),
        "concurrent": lambda d: probe_concurrent(d, args.clients, args.rounds, args.pace),
        "shutdown": probe_shutdown,
    }
    for name, probe in probes.items():
        if args.only and name not in args.only:
            continue
        with tempfile.TemporaryDirectory(prefix="voxnode-bench-wyoming-limits-") as tmp:
            d = WyomingDaemon(Path(tmp), python=PYTHON)
            try:
                out[name] = asyncio.run(probe(d))
            finally:
                code = d.stop()
            out[name]["daemon_exit"] = code
            out[name]["tracebacks"] = d.log().count("Traceback")
        print(name, json.dumps(out[name]), flush=True)
    if args.write:
        Path(args.write).write_text(json.dumps(out, indent=1) + "\n")
        print(f"written to {args.write}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
