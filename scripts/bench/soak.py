"""Soak: the real daemon for an hour on speech through an ALSA FIFO PCM, publishing to a local Mosquitto;
reports the RSS slope after warm-up (target < 5 MB/h) and whether every final arrived once, in seq order.

Not a test (an hour of CPU): `make soak` runs it and writes the figures to scripts/bench/results/soak.json and the
summary between the soak markers in docs/reliability.md.

    python -m scripts.bench.soak --minutes 60 --warmup-minutes 10 --write
    python -m scripts.bench.soak --minutes 3 --warmup-minutes 1       # a quick check of the script itself

Audio: the bundled demo clip and Debian's pocketsphinx-testdata utterances (if installed), each followed
by 3 s of silence, looped, written one 20 ms period at a time in real time into a FIFO that an ALSA
`type file` PCM reads: the microphone's path through ALSA, capture, ring, VAD, decoder, sinks.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from scripts import REPO as ROOT
from scripts import RESULTS
from scripts.bench.machine import describe, load
from voxnode.audio.format import PERIOD_FRAMES, PERIOD_S, SAMPLE_RATE
from voxnode.audio.wavfile import float_to_s16, read_audio
from voxnode.demo import alsa_config, bundled_clip
from voxnode.mqtt.localbroker import LocalBroker
from voxnode.process_stop import stop_process

POCKETSPHINX = Path("/usr/share/pocketsphinx/test/data")
PCM = "voxnode_soak"
GAP_S = 3.0
TARGET_MB_PER_H = 5.0
SAMPLE_S = 10.0


def clips() -> list[np.ndarray]:
    paths = [bundled_clip()]
    for sub in ("librivox", "cards"):
        folder = POCKETSPHINX / sub
        if folder.is_dir():
            paths += sorted(folder.glob("*.wav"))
    gap = np.zeros(int(GAP_S * SAMPLE_RATE), dtype=np.int16)
    return [np.concatenate((float_to_s16(read_audio(p)), gap)) for p in paths]


class Player(threading.Thread):
    """Plays the clips in a loop into the FIFO, in real time; counts the utterances played."""

    def __init__(self, fifo: Path, audio: list[np.ndarray]):
        super().__init__(name="soak-player", daemon=True)
        self.fifo, self.audio = fifo, audio
        self.played = 0
        self.stop_event = threading.Event()

    def run(self) -> None:
        try:
            with open(self.fifo, "wb", buffering=0) as f:
                t0, n = time.monotonic(), 0
                while not self.stop_event.is_set():
                    pcm = self.audio[self.played % len(self.audio)]
                    for i in range(0, pcm.size - pcm.size % PERIOD_FRAMES, PERIOD_FRAMES):
                        f.write(pcm[i : i + PERIOD_FRAMES].tobytes())
                        n += 1
                        delay = t0 + n * PERIOD_S - time.monotonic()
                        if delay > 0 and self.stop_event.wait(delay):
                            return
                    self.played += 1
        except OSError:
            pass


class Listener:
    """Records every final and the latest health from the broker."""

    def __init__(self, port: int):
        self.finals: list[dict] = []
        self.health: dict | None = None
        self.lock = threading.Lock()
        c = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="soak-listener")
        c.on_connect = lambda cl, *a: cl.subscribe([("voxnode/soak/+/transcript", 1), ("voxnode/soak/health", 0)])
        c.on_message = self._on_message
        c.connect("127.0.0.1", port)
        c.loop_start()
        self.client = c

    def _on_message(self, client, userdata, msg) -> None:
        data = json.loads(msg.payload)
        with self.lock:
            if msg.topic.endswith("/transcript"):
                self.finals.append(data)
            else:
                self.health = data

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def vm_rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return int(next(line for line in f if line.startswith("VmRSS:")).split()[1])


def slope_mb_per_h(samples: list[tuple[float, int]]) -> float:
    t = np.array([s[0] for s in samples]) / 3600.0
    rss = np.array([s[1] for s in samples]) / 1024.0  # kB -> MB
    return float(np.polyfit(t, rss, 1)[0])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=60.0)
    p.add_argument("--warmup-minutes", type=float, default=10.0)
    p.add_argument(
        "--write",
        action="store_true",
        help="save scripts/bench/results/soak.json and the summary in docs/reliability.md",
    )
    args = p.parse_args()

    work = Path(tempfile.mkdtemp(prefix="voxnode-soak-"))
    fifo = work / "mic.fifo"
    os.mkfifo(fifo)
    (work / "alsa").mkdir()
    (work / "alsa" / "asoundrc").write_text(alsa_config(fifo).replace("voxnode_demo", PCM))
    broker = LocalBroker()
    broker.start()
    config = work / "config.toml"
    config.write_text(
        f'[audio]\ndevice = "{PCM}"\n\n[mqtt]\nenabled = true\nhost = "127.0.0.1"\nport = {broker.port}\n'
        f'node_id = "soak"\n\n[delivery]\nspool_path = "{work / "spool.sqlite"}"\n\n[health]\ninterval_s = 30.0\n'
    )
    listener = Listener(broker.port)
    player = Player(fifo, clips())
    player.start()
    env = {**os.environ, "XDG_CONFIG_HOME": str(work), "PYTHONMALLOC": "malloc"}
    log_path = work / "daemon.log"
    with open(log_path, "wb") as log:
        daemon = subprocess.Popen(
            [sys.executable, "-m", "voxnode", "run", "--config", str(config)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    samples: list[tuple[float, int]] = []
    t0 = time.monotonic()
    end = t0 + args.minutes * 60
    print(f"soak: {args.minutes:.0f} min, pid {daemon.pid}, work {work}", flush=True)
    try:
        while time.monotonic() < end and daemon.poll() is None:
            samples.append((time.monotonic() - t0, vm_rss_kb(daemon.pid)))
            if len(samples) % 30 == 1:
                print(
                    f"  {samples[-1][0] / 60:5.1f} min  RSS {samples[-1][1] / 1024:6.1f} MB  "
                    f"finals {len(listener.finals)}  played {player.played}",
                    flush=True,
                )
            time.sleep(SAMPLE_S)
    finally:
        crashed = daemon.poll() is not None
        rc = stop_process(daemon, 30)  # -SIGKILL if it did not stop within 30 s
        player.stop_event.set()
        time.sleep(2.0)  # the last finals and the broker round trip
        listener.close()
        broker.stop(time.monotonic() + 5)

    warm = [s for s in samples if s[0] >= args.warmup_minutes * 60]
    slope = slope_mb_per_h(warm) if len(warm) >= 3 else float("nan")
    seqs = [f["seq"] for f in listener.finals]
    unique = sorted({s for s in seqs if s is not None})
    gaps = [(a, b) for a, b in zip(unique, unique[1:], strict=False) if b != a + 1]
    health = listener.health or {}
    text = log_path.read_text(errors="replace")
    summary = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": describe(),
        "load_at_end": load(),
        "command": f"make soak  (python -m scripts.bench.soak --minutes {args.minutes:g} "
        f"--warmup-minutes {args.warmup_minutes:g})",
        "minutes": round(samples[-1][0] / 60, 1) if samples else 0,
        "warmup_minutes": args.warmup_minutes,
        "rss_mb_start": round(samples[0][1] / 1024, 1) if samples else None,
        "rss_mb_after_warmup": round(warm[0][1] / 1024, 1) if warm else None,
        "rss_mb_end": round(samples[-1][1] / 1024, 1) if samples else None,
        "rss_mb_max": round(max(s[1] for s in samples) / 1024, 1) if samples else None,
        "rss_slope_mb_per_h": round(slope, 2),
        "target_mb_per_h": TARGET_MB_PER_H,
        "utterances_played": player.played,
        "finals_received": len(seqs),
        "finals_unique_seq": len(unique),
        "finals_without_seq": seqs.count(None),
        "seq_gaps": gaps,
        "dropped_frames": sum(s.get("dropped_frames", 0) for s in (health.get("streams") or {}).values()),
        "daemon_exit": rc,
        "daemon_crashed": crashed,
        "tracebacks": text.count("Traceback"),
    }
    ok = (
        slope < TARGET_MB_PER_H
        and not gaps
        and not crashed
        and rc == 0
        and summary["tracebacks"] == 0
        and summary["finals_without_seq"] == 0
    )
    summary["pass"] = bool(ok)
    print(json.dumps(summary, indent=2))
    if ok:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"soak: FAILED; the daemon's log and spool are kept in {work}", file=sys.stderr)
    if args.write:
        (RESULTS / "soak.json").write_text(json.dumps({**summary, "rss_samples_s_kb": samples}, indent=1) + "\n")
        write_summary(ROOT / "docs" / "reliability.md", summary)
    return 0 if ok else 1


def write_summary(doc: Path, s: dict) -> None:
    block = (
        "<!-- soak:begin (written by scripts/bench/soak.py) -->\n"
        f"Last run {s['date']}, {s['machine']}: `{s['command']}`.\n\n"
        "| | figure |\n|---|---|\n"
        f"| duration | {s['minutes']} min (first {s['warmup_minutes']:g} min are warm-up) |\n"
        f"| RSS start / after warm-up / end / max | {s['rss_mb_start']} / {s['rss_mb_after_warmup']} / "
        f"{s['rss_mb_end']} / {s['rss_mb_max']} MB |\n"
        f"| **RSS slope after warm-up** (least squares, one sample per {SAMPLE_S:.0f} s) | "
        f"**{s['rss_slope_mb_per_h']} MB/h** (target < {s['target_mb_per_h']:g}) |\n"
        f"| utterances played / finals received / unique seq | {s['utterances_played']} / {s['finals_received']} / "
        f"{s['finals_unique_seq']} |\n"
        f"| seq gaps / finals without seq / dropped frames | {len(s['seq_gaps'])} / {s['finals_without_seq']} / "
        f"{s['dropped_frames']} |\n"
        f"| result | {'pass' if s['pass'] else 'FAIL'} |\n"
        "<!-- soak:end -->"
    )
    text = doc.read_text()
    new = re.sub(r"<!-- soak:begin.*?<!-- soak:end -->", lambda m: block, text, flags=re.S)
    doc.write_text(new if new != text else text.rstrip() + "\n\n" + block + "\n")


if __name__ == "__main__":
    sys.exit(main())
