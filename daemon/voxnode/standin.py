"""A stand-in daemon for tests and benchmarks; nothing at run time imports it.

It is the daemon as its hooks (`view`, a HostView), the health reporter (HealthSource) and the
MQTT commands (DaemonControl) see it, with no audio thread and no engine: what is announced,
reported and published does not depend on audio. Its streams are the config's, all running;
each reports `figures` (counters a test or benchmark chooses). Tests that need audio run the
real Daemon.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from voxnode.config import Config
from voxnode.config.audio import StreamConfig
from voxnode.control import switch_stream
from voxnode.events import Event
from voxnode.host_view import CaptureVitals, HostView, StatusFigures, Vitals

# What each stream reports unless told otherwise: a running capture with nothing wrong.
FIGURES = {"state": "running", "queue_depth": 0, "dropped_frames": 0, "xruns": 0, "device_errors": 0}


def mqtt_config(
    port: int, spool_path: Path | str, node_id: str, streams: dict[str, str] | None = None, **mqtt
) -> Config:
    """The default config with MQTT on for node `node_id` at a local broker's `port`, the spool at
    `spool_path` (the MQTT tests and `scripts/bench/mqtt.py`); `streams`: [[streams]] name -> area
    (devices "null"), None = the single [audio] "mic"; `mqtt`: more [mqtt] settings."""
    base = Config()
    if streams is not None:
        base = dataclasses.replace(
            base, streams=tuple(StreamConfig(name=n, device="null", area=a) for n, a in streams.items())
        )
    return dataclasses.replace(
        base,
        mqtt=dataclasses.replace(base.mqtt, enabled=True, host="127.0.0.1", port=port, node_id=node_id, **mqtt),
        delivery=dataclasses.replace(base.delivery, spool_path=str(spool_path)),
    )


class StandInDaemon:
    def __init__(self, config: Config, figures: dict | None = None):
        self.config = config  # a test replaces it to "reload"; the status message checksums it
        self.figures = {**FIGURES, **(figures or {})}
        self.started_mono = time.monotonic()
        self.muted: set[str] = set()
        self.playing_streams: set[str] = set()
        self.emitted: list[Event] = []  # what hooks handed to `view.emit`
        self.reloads = 0  # reload requests (a command, a hook)
        self.view = HostView(self.vitals, self.status, self, lambda: self.config, self.emitted.append)

    # ---- HealthSource ------------------------------------------------------------------------------

    def snapshot(self) -> dict:
        streams = {n: dict(self.figures) for n in self.stream_names()}
        return {"uptime_s": round(time.monotonic() - self.started_mono, 1), "streams": streams}

    def engine_info(self):
        return None  # no engine loaded

    # ---- HostView ----------------------------------------------------------------------------------

    def vitals(self) -> Vitals:
        now = time.monotonic()
        streams = tuple(
            CaptureVitals(s.name, s.device, "running", 1, now, self.started_mono, True, f"stream-{s.name}", True)
            for s in self.config.effective_streams()
        )
        return Vitals(streams, (), (), self.config.service)

    def status(self) -> StatusFigures:
        return StatusFigures({n: dict(self.figures) for n in self.stream_names()}, None)

    # ---- DaemonControl -----------------------------------------------------------------------------

    def stream_names(self) -> list[str]:
        return [s.name for s in self.config.effective_streams()]

    def is_muted(self, stream: str) -> bool:
        return stream in self.muted

    def set_muted(self, stream: str, muted: bool) -> None:
        switch_stream(self.muted, stream, muted, self.stream_names())

    def follow_up(self, stream: str) -> bool | None:
        return None  # no stream listens for a wake word here

    def set_follow_up(self, stream: str, on: bool) -> None:
        raise KeyError(stream)

    def playing(self, stream: str) -> bool:
        return stream in self.playing_streams

    def set_playing(self, stream: str, playing: bool) -> None:
        switch_stream(self.playing_streams, stream, playing, self.stream_names())

    def request_reload(self) -> None:
        self.reloads += 1
