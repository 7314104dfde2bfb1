"""[service]: running under a supervisor (systemd): shutdown bound, watchdog stall limits."""

from dataclasses import dataclass

from voxnode.config.fields import setting
from voxnode.lifecycle import STOP_TIMEOUT_S


@dataclass(frozen=True)
class ServiceConfig:
    stop_timeout_s: float = setting(
        STOP_TIMEOUT_S,
        "On SIGTERM, time to finish the utterance in flight and flush the sinks before exiting anyway. "
        "Keep it below the unit's TimeoutStopSec.",
        min=0.0,
        max=120.0,
    )
    capture_stall_s: float = setting(
        5.0,
        "A capture that delivers no audio for this long (and reports no device error) counts as stalled: "
        "watchdog pings stop, so systemd restarts voxnode after WatchdogSec.",
        min=0.5,
        max=600.0,
    )
    worker_stall_s: float = setting(
        60.0,
        "A stream or decode worker busy with one piece of work for longer than this counts as stuck "
        "(watchdog pings stop). Must exceed the slowest decode on this hardware.",
        min=1.0,
        max=3600.0,
    )
