"""Wyoming server benchmark (issue 15): audio-stop -> transcript against the engine's compute time,
concurrent clients, and clients that leave mid-request.

A real `voxnode run` (no microphone, [wyoming] on, debug log) in a subprocess; wyoming's own client
(AsyncTcpClient) in this process; real recorded speech (pocketsphinx-testdata and Asterisk prompts,
scripts/bench/speech_corpus.py).

1. One client at a time, each clip sent in one burst (100 ms chunks, no pauses), then audio-stop:
   the client times audio-stop -> transcript; the daemon logs the engine's compute time for that
   request's final (the decode thread's start -> end of `Recognizer.transcribe` on the same audio).
   Ratio = the first / the second; target <= 1.2 (no waiting beyond the decode itself).
2. Four clients at once, each streaming a different clip in real time (as a satellite does), for
   `--rounds` rounds, with a fifth client per round that sends half its clip and disconnects.
   Every answer is checked (no error event, WER against the reference); the leaver must cost the
   others nothing (their latency is compared with a round without it).

    .venv/bin/python -m scripts.bench.wyoming_server --write scripts/bench/results/wyoming_benchmark.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from scripts import REPO, command_line
from scripts.bench import speech_corpus as sc
from scripts.bench.wyoming_client import WyomingDaemon, pcm, transcribe
from voxnode.asr.wer import corpus_wer

DECODE_LINE = re.compile(r"wyoming (wyoming-\d+): ([\d.]+) s of audio -> .* \(decode (\d+) ms, queued (\d+) ms")


def pct(xs: list[float], q: float, digits: int = 1) -> float:
    return round(float(np.percentile(xs, q)), digits) if xs else float("nan")


def decode_times(log: str) -> dict[str, tuple[float, float, float]]:
    """connection key -> (audio s, decode ms, queued ms) of its (last) final, from the daemon's log."""
    return {m.group(1): (float(m.group(2)), float(m.group(3)), float(m.group(4))) for m in DECODE_LINE.finditer(log)}


async def sequential(d: WyomingDaemon, clips: list, repeats: int) -> dict:
    rows = []
    n = 0
    for r in range(repeats):
        for u in clips:
            ex = await transcribe(d.port, pcm(u.audio))
            n += 1
            rows.append({"clip": u.name, "round": r, "key": f"wyoming-{n}", "ex": ex, "ref": u.text})
    await asyncio.sleep(0.3)
    times = decode_times(d.log())
    out = []
    for row in rows:
        ex = row["ex"]
        audio_s, decode_ms, queued_ms = times.get(row["key"], (0.0, 0.0, 0.0))
        if not decode_ms or ex.stop_to_transcript_s is None:
            # Digital silence (an Asterisk "silence" prompt): the engine's silence guard answers at once.
            print(f"no decode time for {row['clip']} ({row['key']}): {ex.types} {ex.error}", flush=True)
            continue
        stop_ms = ex.stop_to_transcript_s * 1e3
        out.append(
            {
                "clip": row["clip"],
                "audio_s": audio_s,
                "decode_ms": decode_ms,
                "queued_ms": queued_ms,
                "stop_to_transcript_ms": round(stop_ms, 1),
                "ratio": round(stop_ms / decode_ms, 3),
                "error": ex.error,
                "text": ex.text,
                "ref": row["ref"],
            }
        )
    ratios = [r["ratio"] for r in out]
    over = [r["stop_to_transcript_ms"] - r["decode_ms"] for r in out]
    return {
        "requests": len(out),
        "errors": sum(r["error"] is not None for r in out),
        "ratio_p50": pct(ratios, 50, 3),
        "ratio_p95": pct(ratios, 95, 3),
        "ratio_max": round(max(ratios), 3),
        "overhead_ms_p50": pct(over, 50),
        "overhead_ms_p95": pct(over, 95),
        "decode_ms_p50": pct([r["decode_ms"] for r in out], 50),
        "wer": round(corpus_wer([(r["ref"], r["text"] or "") for r in out]), 4),
        "rows": out,
    }


async def concurrent(d: WyomingDaemon, clips: list, rounds: int) -> dict:
    rounds_out = []
    for r in range(rounds):
        picked = [clips[(4 * r + i) % len(clips)] for i in range(4)]
        with_leaver = r % 2 == 1
        jobs = [transcribe(d.port, pcm(u.audio), pace=True) for u in picked]
        if with_leaver:
            leaver = clips[(4 * r + 4) % len(clips)]
            jobs.append(transcribe(d.port, pcm(leaver.audio), pace=True, stop_after_s=leaver.duration_s / 2))
        results = await asyncio.gather(*jobs)
        served = results[:4]
        rounds_out.append(
            {
                "round": r,
                "leaver": with_leaver,
                "errors": sum(ex.error is not None for ex in served),
                "stop_to_transcript_ms": [round((ex.stop_to_transcript_s or float("nan")) * 1e3, 1) for ex in served],
                "texts": [ex.text for ex in served],
                "refs": [u.text for u in picked],
                "chunks_before_stop": [ex.chunks_before_stop for ex in served],
            }
        )
    lat = lambda leaver: [x for ro in rounds_out if ro["leaver"] == leaver for x in ro["stop_to_transcript_ms"]]  # noqa: E731
    refs = [t for ro in rounds_out for t in ro["refs"]]
    hyps = [t or "" for ro in rounds_out for t in ro["texts"]]
    log = d.log()
    return {
        "rounds": rounds,
        "requests": 4 * rounds,
        "errors": sum(ro["errors"] for ro in rounds_out),
        "leavers": sum(ro["leaver"] for ro in rounds_out),
        "leavers_logged": log.count("client left in the middle of a request"),
        "latency_ms_without_leaver": {"p50": pct(lat(False), 50), "p95": pct(lat(False), 95)},
        "latency_ms_with_leaver": {"p50": pct(lat(True), 50), "p95": pct(lat(True), 95)},
        "wer": round(corpus_wer(list(zip(refs, hyps, strict=True))), 4),
        "partials_streamed": sum(x > 0 for ro in rounds_out for x in ro["chunks_before_stop"]),
        "tracebacks": log.count("Traceback"),
        "rounds_detail": rounds_out,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--asterisk", type=int, default=20, help="Asterisk prompts besides the 10 pocketsphinx clips")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--write", metavar="JSON")
    args = p.parse_args()
    clips = [u for u in sc.real_speech(n_asterisk=args.asterisk, seed=3) if u.duration_s <= 10]
    out: dict = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": platform.machine(),
        "command": command_line(),
        "clips": len(clips),
    }
    with tempfile.TemporaryDirectory(prefix="voxnode-bench-wyoming-") as tmp:
        d = WyomingDaemon(Path(tmp), python=str(REPO / ".venv" / "bin" / "python"), max_clients=8)
        try:
            out["sequential"] = asyncio.run(sequential(d, clips, args.repeats))
            s = out["sequential"]
            print(
                f"sequential: {s['requests']} requests, {s['errors']} errors, stop->transcript / decode "
                f"p50 {s['ratio_p50']} p95 {s['ratio_p95']} max {s['ratio_max']}; overhead p50 "
                f"{s['overhead_ms_p50']} ms p95 {s['overhead_ms_p95']} ms; WER {s['wer']}",
                flush=True,
            )
            out["concurrent"] = asyncio.run(concurrent(d, clips, args.rounds))
            c = out["concurrent"]
            print(
                f"concurrent: {c['requests']} requests in {c['rounds']} rounds of 4, {c['errors']} errors, "
                f"{c['leavers']} leavers ({c['leavers_logged']} logged); latency without/with a leaver p50 "
                f"{c['latency_ms_without_leaver']['p50']}/{c['latency_ms_with_leaver']['p50']} ms; WER {c['wer']}",
                flush=True,
            )
        finally:
            out["daemon_exit"] = d.stop()
    if args.write:
        Path(args.write).write_text(json.dumps(out, indent=1) + "\n")
        print(f"written to {args.write}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
