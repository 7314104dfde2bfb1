"""What a hook sees of the daemon: a frozen view the daemon builds once, never the Daemon itself.

Each hook reads the part it needs: the systemd hooks `vitals()` (readiness, liveness) and
`status()` (the STATUS= line's figures); MQTT `control` (the commands' table acts on it) and
`config()`; a source of events `emit`. Tests and benchmarks build one over `voxnode.standin`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from voxnode.config import Config
    from voxnode.config.service import ServiceConfig
    from voxnode.control import DaemonControl
    from voxnode.events import Event
    from voxnode.heartbeat import Heartbeat


@dataclass(frozen=True)
class CaptureVitals:
    """One stream's capture and worker, as a supervisor judges them (systemd/liveness.py)."""

    name: str
    device: str  # the device the capture opened (granted), else the configured one
    state: str  # the source's: starting | running | backoff | stopped | finished
    frames: int
    last_frame_mono: float
    started_mono: float  # when the capture started: one not open yet is judged from here
    capture_alive: bool
    worker: str  # the worker's heartbeat name
    worker_alive: bool


@dataclass(frozen=True)
class Vitals:
    """Everything readiness and liveness are decided from, read at one moment."""

    streams: tuple[CaptureVitals, ...]
    heartbeats: tuple[Heartbeat, ...]  # every worker's: a unit of work that never ends is a stall
    ready_checks: tuple[Callable[[], bool], ...]  # e.g. "the engine has loaded its model"
    service: ServiceConfig  # capture_stall_s, worker_stall_s


@dataclass(frozen=True)
class StatusFigures:
    """What the STATUS= line shows besides the verdicts: per-stream state and the last latency."""

    streams: dict[str, dict]  # HealthReporter.streams(): state, last_error, ...
    last_latency_ms: float | None


@dataclass(frozen=True)
class HostView:
    """Passed to every Hook call; built by the daemon (Daemon.view)."""

    vitals: Callable[[], Vitals]
    status: Callable[[], StatusFigures]
    control: DaemonControl  # what remote commands may change
    config: Callable[[], Config]  # the config in force (it changes on reload)
    emit: Callable[[Event], None]  # hand an event to the outputs, as the pipeline does
