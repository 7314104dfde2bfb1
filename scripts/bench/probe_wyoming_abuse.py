"""The microphone's finals while the Wyoming server is abused (issue 27, docs/reliability.md): the
three abuse probes of scripts/bench/wyoming_limits.py run while a real microphone speaks into the
real daemon, and the microphone's finals are compared with a phase without abuse.

One `voxnode run --stdout` (mic_daemon.py: the microphone an ALSA `type file` PCM over a FIFO fed in
real time; the Wyoming server on with the shipped limits). Phases, in this order, on the same daemon:

- baseline: no abuse;
- describe: one connection at a time sends `--describes` describe events and reads no reply, is held
  15 s (the server disconnects a client that reads nothing for 10 s), then the next one starts, for
  the whole phase (`--once`: one flood only, the target's size);
- unfinished: one connection at a time opens `--unfinished` requests (transcribe + audio-start, no
  audio), holds the connection 5 s and closes it; again for the whole phase (or `--once`);
- idle: `--idle` connections opened at the start and held (8 of them ping every 20 s, the rest
  silent);
- baseline-after: no abuse again (the node recovered).

In every phase the microphone speaks the same real recorded utterances (pocketsphinx-testdata, quiet
ends trimmed) `--gap-s` apart, and a legitimate client sends a 3 s clip every `--legit-every-s` (in
the baseline too, so the engine has the same work). Per phase: the microphone's finals (count, WER
over the utterances, end of speech -> final p50/p95), the legitimate client's connect -> transcript
time, the daemon's RSS (VmRSS every 0.5 s: before, peak, p95, after), the load average.

Targets (issue 27): RSS growth <= 30 MB per abuse, a legitimate client served within 2 s, the
microphone's finals unaffected: every utterance a final, WER no worse than the baseline's by more
than `--wer-slack`, end of speech -> final p95 <= 1.5 s (the microphone target of the fairness probe).

    make probe-wyoming-abuse     # .venv/bin/python -m scripts.bench.probe_wyoming_abuse \
                                 #     --json scripts/bench/results/wyoming_abuse_probe.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path

from scripts import command_line
from scripts.bench import speech_corpus as sc
from scripts.bench.mic_daemon import MicDaemon, RssSampler, Speaker, finals_summary, load, match_finals, trim
from scripts.bench.wyoming_limits import legit, send_lines

DESCRIBE = b'{"type": "describe"}\n'
UNFINISHED = (
    b'{"type": "transcribe", "data": {"language": "en"}}\n'
    b'{"type": "audio-start", "data": {"rate": 16000, "width": 2, "channels": 1}}\n'
)
STALLED = "read none of its replies"  # the server's log line for a client it disconnected for that
TARGET_RSS_GROWTH_MB = 30.0
TARGET_LEGIT_S = 2.0
TARGET_MIC_P95_S = 1.5


async def abuse_describe(port: int, n: int, stop: asyncio.Event, tally: dict, repeat: bool = True) -> None:
    while not stop.is_set() and (repeat or not tally):
        _, writer, sent = await send_lines(port, DESCRIBE, n)
        tally["sent"] = tally.get("sent", 0) + sent
        tally["connections"] = tally.get("connections", 0) + 1
        try:  # never read: the server disconnects a client that reads none of its replies for 10 s
            await asyncio.wait_for(stop.wait(), 15.0)
        except TimeoutError:
            pass
        writer.close()


async def abuse_unfinished(port: int, n: int, stop: asyncio.Event, tally: dict, repeat: bool = True) -> None:
    while not stop.is_set() and (repeat or not tally):
        reader, writer, sent = await send_lines(port, UNFINISHED, n, batch=200)
        tally["sent"] = tally.get("sent", 0) + sent
        tally["connections"] = tally.get("connections", 0) + 1
        try:
            await asyncio.wait_for(stop.wait(), 5.0)
        except TimeoutError:
            pass
        writer.close()


async def abuse_idle(port: int, n: int, stop: asyncio.Event, tally: dict) -> None:
    conns = []
    for _ in range(n):
        try:
            conns.append(await asyncio.open_connection("127.0.0.1", port))
        except OSError:
            break
    tally["connections"] = len(conns)

    async def pinger(writer: asyncio.StreamWriter) -> None:
        while True:
            writer.write(b'{"type": "ping", "data": {}}\n')
            await asyncio.sleep(20)

    pingers = [asyncio.create_task(pinger(w)) for _, w in conns[:8]]
    await stop.wait()
    closed = 0
    for r, _ in conns:
        try:
            closed += b"busy" in await asyncio.wait_for(r.read(65536), 0.05)
        except (TimeoutError, ConnectionError, OSError):
            pass
    tally["closed_to_make_room"] = closed
    for t in pingers:
        t.cancel()
    for _, w in conns:
        w.close()


async def phase(d: MicDaemon, name: str, abuse, clips: list, a: argparse.Namespace) -> dict:
    load_start = load()
    before = d.rss_mb()["VmRSS"]
    cpu0 = d.cpu_s()
    rss = RssSampler(d.proc.pid).start()
    d.finals.clear()
    t0 = time.time()
    stop = asyncio.Event()
    tally: dict = {}
    stalled = d.log().count(STALLED)
    task = asyncio.create_task(abuse(d.port, stop, tally)) if abuse else None
    await asyncio.sleep(a.abuse_lead_s if abuse else 0.0)  # the abuse under way before the first word
    speaker = Speaker(d, clips, a.gap_s, rounds=a.rounds).start()
    tries = []
    while speaker.alive():
        tries.append(await legit(d.port))
        await asyncio.sleep(a.legit_every_s)
    await asyncio.to_thread(d.wait_finals, len(speaker.spoken), 60.0)
    load_end = load()
    stop.set()
    if task:
        await asyncio.wait_for(task, 60)
        tally["disconnected_for_not_reading"] = d.log().count(STALLED) - stalled
    await asyncio.sleep(2.0)
    memory = rss.stop()
    after = d.rss_mb()["VmRSS"]
    cpu = d.cpu_s() - cpu0
    matched = match_finals(speaker.spoken, clips, list(d.finals), t0)
    legit_s = [t["s"] for t in tries]
    return {
        "phase": name,
        "abuse": tally,
        "mic": finals_summary(speaker.spoken, clips, list(d.finals), matched),
        "mic_finals": matched,
        "legit_tries": len(tries),
        "legit_served": sum(t["served"] for t in tries),
        "legit_s_max": max(legit_s) if legit_s else None,
        "rss_mb": {"before": before, **memory, "after": after, "growth_peak": round(memory["peak_mb"] - before, 1)},
        "load_start": load_start,
        "load_end": load_end,
        "seconds": round(time.time() - t0, 1),
        "daemon_cpu_s": round(cpu, 1),  # what the phase cost the daemon, whatever the machine's load
    }


def verdicts(phases: list[dict], wer_slack: float) -> dict:
    base = phases[0]["mic"]
    out = {}
    for p in phases[1:]:
        m = p["mic"]
        p["rss_mb"]["peak_over_baseline_peak"] = round(p["rss_mb"]["peak_mb"] - phases[0]["rss_mb"]["peak_mb"], 1)
        out[p["phase"]] = {
            "rss_growth_ok": p["rss_mb"]["growth_peak"] <= TARGET_RSS_GROWTH_MB,
            "legit_ok": p["legit_served"] == p["legit_tries"] and (p["legit_s_max"] or 0) <= TARGET_LEGIT_S,
            "mic_all_finals": m["missing"] == 0 and m["finals"] == m["utterances"],
            "mic_wer_ok": m["wer"] is not None and m["wer"] <= base["wer"] + wer_slack,
            "mic_p95_ok": m["latency_p95_s"] is not None and m["latency_p95_s"] <= TARGET_MIC_P95_S,
        }
    return out


async def run(d: MicDaemon, clips: list, a: argparse.Namespace) -> list[dict]:
    d.say(clips[0][1])  # warm-up: the engine's first decodes allocate their working memory
    await legit(d.port)
    await asyncio.to_thread(d.wait_finals, 1, 30.0)
    plan = [
        ("baseline", None),
        ("describe", lambda port, stop, tally: abuse_describe(port, a.describes, stop, tally, not a.once)),
        ("unfinished", lambda port, stop, tally: abuse_unfinished(port, a.unfinished, stop, tally, not a.once)),
        ("idle", lambda port, stop, tally: abuse_idle(port, a.idle, stop, tally)),
        ("baseline-after", None),
    ]
    out = []
    for name, abuse in plan:
        if a.only and name not in a.only and not name.startswith("baseline"):
            continue
        p = await phase(d, name, abuse, clips, a)
        m = p["mic"]
        print(
            f"{name}: finals {m['finals']}/{m['utterances']}, WER {m['wer']}, p50/p95 {m['latency_p50_s']}/"
            f"{m['latency_p95_s']} s; legit {p['legit_served']}/{p['legit_tries']} max {p['legit_s_max']} s; "
            f"RSS {p['rss_mb']['before']} -> peak {p['rss_mb']['peak_mb']} ({p['rss_mb']['growth_peak']:+}); "
            f"CPU {p['daemon_cpu_s']} s in {p['seconds']} s; "
            f"load {p['load_start'][0]}-{p['load_end'][0]}; {p['abuse']}",
            flush=True,
        )
        out.append(p)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--describes", type=int, default=100_000)
    ap.add_argument("--unfinished", type=int, default=20_000)
    ap.add_argument("--idle", type=int, default=200)
    ap.add_argument("--clips", type=int, default=10, help="how many of the 10 pocketsphinx utterances")
    ap.add_argument("--rounds", type=int, default=1, help="times through the utterances per phase")
    ap.add_argument("--gap-s", type=float, default=3.0)
    ap.add_argument("--legit-every-s", type=float, default=5.0)
    ap.add_argument("--abuse-lead-s", type=float, default=3.0)
    ap.add_argument("--wer-slack", type=float, default=0.02, help="WER above the baseline's still 'unaffected'")
    ap.add_argument("--once", action="store_true", help="one flood per phase (the target's size)")
    ap.add_argument("--only", nargs="*", help="abuse phases to run (the baselines always run)")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    clips = [(u.text, trim(u.audio)) for u in sc.pocketsphinx()][: a.clips]
    assert clips, f"needs pocketsphinx-testdata ({sc.PS_DATA})"
    work = Path(tempfile.mkdtemp(prefix="abuse-probe-"))
    out: dict = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores (shared with other jobs)",
        "command": command_line(),
        "utterances_per_phase": len(clips) * a.rounds,
        "floods": "one per phase" if a.once else "one after another for the whole phase",
        "targets": {
            "rss_growth_mb": TARGET_RSS_GROWTH_MB,
            "legit_s": TARGET_LEGIT_S,
            "mic_p95_s": TARGET_MIC_P95_S,
            "mic_wer_slack": a.wer_slack,
        },
    }
    with MicDaemon(work, python=sys.executable) as d:
        phases = asyncio.run(run(d, clips, a))
        log = d.log()
        out["daemon_exit"] = d.stop()
    out["tracebacks"] = log.count("Traceback")
    out["verdicts"] = verdicts(phases, a.wer_slack)
    out["phases"] = phases
    print(json.dumps(out["verdicts"], indent=1))
    print("daemon exit", out["daemon_exit"], "tracebacks", out["tracebacks"], "log:", d.log_path)
    if a.json:
        a.json.write_text(json.dumps(out, indent=1) + "\n")
        print("written to", a.json)
    ok = all(all(v.values()) for v in out["verdicts"].values()) and out["daemon_exit"] == 0 and not out["tracebacks"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
