"""Test-only event source: the real daemon (`Daemon` + the CLI's outputs) fed synthetic finals.

The MQTT tests need finals at a rate and count they choose, which speech through the engine
cannot give, so this process plays a silent file through the real FileSource/Daemon and a
Hook emits one final every --interval seconds through the daemon, as the pipeline
does. Everything from Daemon.emit on (the sequencer, spool, paho, reconnects, shutdown) is the
production code. Prints `accepted <n> <id>` for each final handed to the daemon (Daemon.emit, the
pipeline's path: the sequencer stores it in the spool, then the outputs see it).

    python -m tests.mqtt.feeder --config C --count N --interval S --tag T [--linger S]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from voxnode.config import load_config
from voxnode.daemon import Daemon, RunOptions
from voxnode.events import TranscriptEvent
from voxnode.host_view import HostView
from voxnode.lifecycle import Hook
from voxnode.logs import setup_logging
from voxnode.outputs.table import add_outputs


def say(line: str) -> None:
    """One line on stdout in one write. The daemon's stdout output prints JSON lines from its own
    thread; print() writes the text and the newline separately, and with PYTHONUNBUFFERED (set on CI)
    each is its own write(2): a JSON line then lands between them ("accepted 14 x{...}"), and that final
    is lost to the reader (test_no_stored_final_is_lost_to_a_kill failed so at load 14)."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


class FinalsSource(Hook):
    def __init__(self, count: int, interval: float, tag: str, stream: str, start_at: float):
        self.count, self.interval, self.tag, self.stream = count, interval, tag, stream
        self.sent = 0
        self.next_at = start_at

    def on_ready(self, host: HostView) -> None:
        self.next_at = time.monotonic()

    def tick(self, host: HostView, now: float) -> None:
        while self.sent < self.count and now >= self.next_at:
            self.sent += 1
            t = time.time()
            ev = TranscriptEvent(
                "final",
                self.stream,
                f"{self.tag}-{self.sent:04d}",
                f"utterance {self.sent} of {self.tag}",
                t - 1.5,
                t - 0.2,
                200.0,
                -0.25,
            )
            host.emit(ev)  # the pipeline's path: the sequencer stores it, then the outputs see it
            say(f"accepted {self.sent} {ev.id}")
            self.next_at += self.interval

    def on_stopping(self, host: HostView) -> None:
        say(f"stopping after {self.sent}")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--config", required=True)
    p.add_argument("--count", type=int, default=10)
    p.add_argument("--interval", type=float, default=0.1)
    p.add_argument("--tag", default="run")
    p.add_argument("--linger", type=float, default=600.0, help="keep running this long after the last final")
    p.add_argument("--partials", action="store_true", help="also emit one partial before each final")
    p.add_argument("--stdout", action="store_true", help="also print every event as a JSON line (as run --stdout)")
    args = p.parse_args()
    config = load_config(args.config)
    setup_logging(config.log)
    seconds = args.count * args.interval + args.linger
    silence = Path(tempfile.mkdtemp(prefix="voxnode-feeder-")) / "silence.raw"
    with open(silence, "wb") as f:
        f.truncate(int(seconds * 16000) * 2)  # sparse zeros: S16_LE 16 kHz mono
    source = FinalsSource(args.count, args.interval, args.tag, config.effective_streams()[0].name, time.monotonic())
    if args.partials:
        inner = source.tick

        def tick(host, now):
            if source.sent < source.count and now >= source.next_at:
                t = time.time()
                host.emit(
                    TranscriptEvent(
                        "partial", source.stream, f"{args.tag}-{source.sent + 1:04d}", "utterance", t - 1, t, 50.0, -0.5
                    )
                )
            inner(host, now)

        source.tick = tick
    from voxnode.reload import config_loader

    daemon = Daemon(config, [], RunOptions(file=str(silence)), hooks=[source], reloader=config_loader(args.config))
    add_outputs(daemon, stdout=args.stdout)  # as `voxnode run` does
    try:
        return daemon.run()
    finally:
        silence.unlink(missing_ok=True)


if __name__ == "__main__":
    sys.exit(main())
