"""The live-noise benchmark's (scripts/bench/live_noise.py) runs of voxnode: one recording played in real
time into a fresh `voxnode run` through its ALSA FIFO (events with when they were read, dropped frames,
the daemon's CPU), and `voxnode transcribe` on every utterance cut from the same recording."""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

from scripts import REPO as ROOT
from scripts.bench import audio_corpus as ac
from scripts.bench import emulate_board
from scripts.bench import live_noise_audio as la
from scripts.bench.live_noise_config import transcribe_settings
from voxnode.process_stop import stop_process

VOXNODE = ROOT / ".venv" / "bin" / "voxnode"
CUT_MARGIN_S = 0.25  # transcribe cuts: the clip (with its own edges) +- this
SETTLE_S = 1.5  # after the last period: the last decode finishes (the tail already gave the endpoint)
PERIOD_BYTES = 640

PACER = r"""
import json, os, sys, time
fifo, pcm, speed, times_path = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
data = open(pcm, 'rb').read()
fd = os.open(fifo, os.O_WRONLY)  # blocks until the daemon has opened its PCM (after loading the model)
n = len(data) // 640
period = 0.02 / speed
times = [0.0] * n
t0 = time.monotonic()
print(json.dumps({'t0_mono': t0, 'wall_minus_mono': time.time() - time.monotonic()}), flush=True)
for i in range(n):
    os.write(fd, data[i * 640:(i + 1) * 640])
    times[i] = time.monotonic()
    delay = t0 + (i + 1) * period - time.monotonic()
    if delay > 0:
        time.sleep(delay)
with open(times_path, 'w') as f:
    json.dump(times, f)
print(json.dumps({'done_mono': time.monotonic()}), flush=True)
sys.stdin.read()  # keep the FIFO open (EOF would feed ALSA stale data) until told to go
"""


def _children_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def play_live(
    track: la.Track, work: Path, lane: int, config_path: Path, speed: float = 1.0, board: str = "x86"
) -> dict:
    """Play the track into a fresh daemon in real time (or `speed` x); events with read times.
    `board`: the daemon (only it: not the pacer, not the scoring) runs under scripts/bench/emulate_board.py."""
    pcm = work / f"lane{lane}.pcm"
    pcm.write_bytes(ac.to_pcm16(track.audio))
    times_path = work / f"lane{lane}.times.json"
    env = {**os.environ, "XDG_CONFIG_HOME": str(work), "PYTHONMALLOC": "malloc"}
    errlog = open(work / f"lane{lane}-{track.condition.name}.stderr", "w+")  # noqa: SIM115 - lives as long as the daemon, closed below
    children_cpu0 = _children_cpu_s()
    t_start = time.monotonic()
    daemon = subprocess.Popen(
        [*emulate_board.argv_prefix(board), str(VOXNODE), "run", "--stdout", "--config", str(config_path)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=errlog,
        text=True,
    )
    events: list[tuple[float, dict]] = []

    def read_events():
        for line in daemon.stdout:
            t = time.monotonic()
            try:
                events.append((t, json.loads(line)))
            except json.JSONDecodeError:
                pass

    reader = threading.Thread(target=read_events, daemon=True)
    reader.start()
    pacer = subprocess.Popen(
        [sys.executable, "-c", PACER, str(work / f"lane{lane}.fifo"), str(pcm), str(speed), str(times_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        head = json.loads(pacer.stdout.readline())
        done = pacer.stdout.readline()
        if not done:
            raise RuntimeError("pacer ended early")
        time.sleep(SETTLE_S)
        daemon.send_signal(signal.SIGTERM)
        time.sleep(0.3)
    finally:
        pacer.stdin.close()  # the FIFO closes: a capture blocked in its read returns
        before_pacer = _children_cpu_s()
        pacer.wait(10)
        pacer_cpu_s = _children_cpu_s() - before_pacer
        stop_process(daemon, 30)  # SIGTERMed above; a second one only repeats the stop request (daemon.py)
        reader.join(5)
    # The daemon's CPU over its whole run, start-up included: children's usage is counted when they
    # are reaped, and the pacer was reaped before (its usage is taken out by the snapshot below it).
    # Under an emulated board the emulator says what the daemon alone used (its own polling costs
    # ~10 % of a host core, more than the daemon on a board).
    daemon_cpu_s = _children_cpu_s() - children_cpu0 - pacer_cpu_s
    run_s = time.monotonic() - t_start
    errlog.seek(0)
    stderr = errlog.read()
    emulated = re.search(r"emulate_board: command CPU ([\d.]+) s", stderr)
    if emulated:
        daemon_cpu_s = float(emulated.group(1))
    # Only an emulated daemon has its own peak RSS: this process's children include transcribe.
    rss = re.search(r"emulate_board: .*command peak RSS (\d+) MB", stderr)
    errlog.close()
    write_times = np.array(json.loads(times_path.read_text()))
    m = re.search(r"stopped: (\d+) frames, (\d+) dropped, (\d+) xruns", stderr)
    return {
        "events": events,
        "write_times": write_times,
        "wall_minus_mono": head["wall_minus_mono"],
        "frames": int(m.group(1)) if m else None,
        "dropped_frames": int(m.group(2)) if m else None,
        "xruns": int(m.group(3)) if m else None,
        "finals_lost": len(re.findall(r"final for utterance \d+ lost|final for stream \S+ dropped", stderr)),
        "daemon_rc": daemon.returncode,
        "daemon_cpu_pct": round(100 * daemon_cpu_s / run_s, 1) if run_s > 0 else None,
        "daemon_peak_rss_mb": int(rss.group(1)) if rss else None,
        "stderr_tail": stderr[-2000:] if daemon.returncode else "",
    }


def transcribe_cuts(tracks: list[la.Track], work: Path, cache: Path, config: Path) -> dict[tuple[str, int], str]:
    """`voxnode transcribe` (with the live runs' config: the same front-end and model) on every
    utterance cut from its noisy recording; cached by audio and config."""
    import hashlib

    known = json.loads(cache.read_text()) if cache.exists() else {}
    settings = transcribe_settings(config.read_text())
    todo, keys = [], {}
    for t in tracks:
        for i, u in enumerate(t.utts):
            m = int(CUT_MARGIN_S * la.RATE)
            cut = t.audio[max(0, u.clip_start - m) : u.clip_end + m]
            pcm = ac.to_pcm16(cut)
            h = hashlib.sha1(pcm + settings.encode()).hexdigest()[:20]
            keys[(t.condition.name, i)] = h
            if h not in known:
                path = work / f"cut-{h}.raw"
                path.write_bytes(pcm)
                todo.append((h, path))
    if todo:
        env = {**os.environ, "PYTHONMALLOC": "malloc"}
        out = subprocess.run(
            [str(VOXNODE), "transcribe", "--config", str(config), "--raw", "--json", *[str(p) for _, p in todo]],
            env=env,
            capture_output=True,
            text=True,
        )
        by_file = {}
        for line in out.stdout.splitlines():
            d = json.loads(line)
            by_file[d["file"]] = d["text"]
        for h, p in todo:
            if str(p) not in by_file:
                raise RuntimeError(f"voxnode transcribe gave nothing for {p}: {out.stderr[-500:]}")
            known[h] = by_file[str(p)]
            p.unlink()
        cache.write_text(json.dumps(known))
    return {k: known[h] for k, h in keys.items()}
