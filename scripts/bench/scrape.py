"""What a Prometheus scrape costs a running daemon: series served, wall time and daemon CPU per scrape.

    .venv/bin/voxnode run --config C --file speech.wav &     # [health] prometheus = true
    .venv/bin/python -m scripts.bench.scrape http://127.0.0.1:9464/metrics --scrapes 200

The daemon's CPU comes from its own process_cpu_seconds_total, less what it spent at rest over the
same wall time (measured first over --idle-s); figures on a loaded machine are noisy.
"""

from __future__ import annotations

import argparse
import re
import time
import urllib.request


def fetch(url: str) -> str:
    return urllib.request.urlopen(url, timeout=10).read().decode()


def cpu_seconds(text: str) -> float:
    return float(re.search(r"^process_cpu_seconds_total (\S+)", text, re.M).group(1))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("url")
    p.add_argument("--scrapes", type=int, default=200)
    p.add_argument("--idle-s", type=float, default=4.0)
    args = p.parse_args()
    text = fetch(args.url)
    series = [line for line in text.splitlines() if line and not line.startswith("#")]
    voxnode = sum(1 for line in series if line.startswith("voxnode_"))
    c0 = cpu_seconds(fetch(args.url))
    time.sleep(args.idle_s)
    base = (cpu_seconds(fetch(args.url)) - c0) / args.idle_s
    w0 = time.monotonic()
    c1 = cpu_seconds(fetch(args.url))
    for _ in range(args.scrapes):
        fetch(args.url)
    wall = time.monotonic() - w0
    spent = cpu_seconds(fetch(args.url)) - c1 - base * wall
    print(f"series: {len(series)} ({voxnode} voxnode_*), {len(text)} bytes")
    print(f"per scrape: {wall / args.scrapes * 1e3:.1f} ms wall, {spent / args.scrapes * 1e3:.1f} ms daemon CPU")


if __name__ == "__main__":
    main()
