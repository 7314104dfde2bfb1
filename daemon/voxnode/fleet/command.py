"""`voxnode fleet`: every node's status and health from the broker, as a live table, once (for cron
and monitoring checks: exit status 1 when a node has a problem), or as JSON."""

from __future__ import annotations

import json
import sys
import time
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TextIO

from voxnode.config.mqtt import MqttConfig
from voxnode.events import iso8601
from voxnode.fleet.nodes import Limits, Row, summarize
from voxnode.fleet.table import render
from voxnode.fleet.waits import Waits
from voxnode.fleet.watch import STOP_S, FleetWatch

CLEAR = "\x1b[H\x1b[2J"  # cursor home, clear screen: the live table redraws in place on a terminal


@dataclass(frozen=True)
class FleetOptions:
    once: bool = False
    as_json: bool = False
    timeout_s: float = 5.0  # connect (and, with once, collect the retained messages) within this
    interval_s: float = 2.0  # live: redraw this often
    limits: Limits = Limits()


def snapshot(watch: FleetWatch, limits: Limits) -> tuple[list[Row], dict]:
    now = time.time()
    rows = [summarize(n, now, limits) for n in watch.nodes()]
    doc = {
        "time": iso8601(now),
        "broker": watch.where,
        "prefix": watch.prefix,
        "connected": watch.connected,
        "nodes": [r.as_dict() for r in rows],
        "nodes_with_problems": sum(1 for r in rows if r.problems),
    }
    return rows, doc


def run_fleet(
    config: MqttConfig, config_name: str, options: FleetOptions, out: TextIO = sys.stdout, waits: Waits | None = None
) -> int:
    """Exit status: --once: 0 when every node is fine, 1 when one has a problem or none was found.
    Ctrl-C ends the live view (exit 0); elsewhere it raises KeyboardInterrupt (the CLI: exit 130).
    `waits`: one already taking Ctrl-C (the CLI's, taken before this module loaded), else a new one."""
    with Waits().taking_ctrl_c() if waits is None else nullcontext(waits) as waits:
        watch = FleetWatch(config, config_name, options.timeout_s, waits)
        watch.start()
        try:
            if options.once:
                watch.wait_retained(options.timeout_s)
                rows, doc = snapshot(watch, options.limits)
                out.write(json.dumps(doc, indent=2) + "\n" if options.as_json else render(rows, _header(doc)))
                return 0 if rows and not any(r.problems for r in rows) else 1
            return _live(watch, options, out)
        finally:
            watch.stop(time.monotonic() + STOP_S)


def _header(doc: dict) -> str:
    link = "" if doc["connected"] else "  (broker connection lost; reconnecting)"
    return f"voxnode fleet  {doc['prefix']}/+ on {doc['broker']}  {doc['time'][:19].replace('T', ' ')} UTC{link}"


def _live(watch: FleetWatch, options: FleetOptions, out: TextIO) -> int:
    tty = out.isatty()
    try:
        watch.wait_retained(options.timeout_s)  # the first table shows every node, not the first few
        while True:
            rows, doc = snapshot(watch, options.limits)
            with watch.waits.interruptible():  # a reader that does not read blocks the write
                if options.as_json:
                    out.write(json.dumps(doc, separators=(",", ":")) + "\n")  # one document per line
                else:
                    out.write((CLEAR if tty else "") + render(rows, _header(doc)) + ("" if tty else "\n"))
                out.flush()
            watch.waits.sleep(options.interval_s)
    except KeyboardInterrupt:
        return 0
    except BrokenPipeError:  # `voxnode fleet | head`
        return 0
