"""What a config reload changes: which streams keep running, which restart, what needs a full restart.

Pure functions of (old config, new config), so the rules are testable without
threads or devices; `Daemon.reload` carries the plan out. `StartRetries` keeps the
streams a reload could not start, for the daemon's main loop to retry.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from voxnode.audio.source import SourceStats
from voxnode.config import Config, load_config
from voxnode.config.audio import AudioConfig, StreamConfig
from voxnode.errors import VoxnodeError

if TYPE_CHECKING:
    from voxnode.daemon import Daemon
    from voxnode.lifecycle import Hook

log = logging.getLogger("voxnode.daemon")

# Read live by whoever needs them on every use (log level is re-applied, [service] is read each tick).
LIVE_SECTIONS = frozenset({"log", "service"})
# Sections that shape every stream's capture or pipeline: a change restarts all streams.
ALL_STREAMS_SECTIONS = ("audio", "frontend", "vad", "stream", "wake")
# Handled stream by stream.
PER_STREAM_FIELDS = frozenset({"streams"})
# Keys inside live or per-stream sections that the running process still cannot change:
# the engines are loaded once, at start.
RESTART_ONLY_KEYS = (("stream", "decode_workers"),)


@dataclass(frozen=True)
class ReloadPlan:
    keep: tuple[str, ...] = ()
    restart: tuple[str, ...] = ()
    start: tuple[str, ...] = ()
    stop: tuple[str, ...] = ()
    # Sections that changed but cannot be applied to a running process (the model, the broker, ...).
    needs_restart: tuple[str, ...] = ()

    def summary(self) -> str:
        parts = [
            f"{what} {', '.join(names)}"
            for what, names in (
                ("restarted", self.restart),
                ("started", self.start),
                ("stopped", self.stop),
                ("kept", self.keep),
            )
            if names
        ]
        if self.needs_restart:
            parts.append(f"changes to [{'], ['.join(self.needs_restart)}] take effect after a restart")
        return "; ".join(parts) or "nothing changed"


@dataclass(frozen=True)
class ReloadResult:
    ok: bool
    plan: ReloadPlan = field(default_factory=ReloadPlan)
    error: str = ""

    def summary(self) -> str:
        return (
            f"reload failed, previous config still running: {self.error}"
            if not self.ok
            else (f"reloaded: {self.plan.summary()}")
        )


def plan_reload(old: Config, new: Config) -> ReloadPlan:
    old_streams = {s.name: s for s in old.effective_streams()}
    new_streams = {s.name: s for s in new.effective_streams()}
    all_changed = any(getattr(old, name) != getattr(new, name) for name in ALL_STREAMS_SECTIONS)
    keep, restart, start = [], [], []
    for name, stream in new_streams.items():
        if name not in old_streams:
            start.append(name)
        elif all_changed or old_streams[name] != stream:
            restart.append(name)
        else:
            keep.append(name)
    stop = [name for name in old_streams if name not in new_streams]
    handled = LIVE_SECTIONS | PER_STREAM_FIELDS | set(ALL_STREAMS_SECTIONS)
    needs_restart = [
        f.name
        for f in dataclasses.fields(Config)
        if f.name not in handled and not f.metadata.get("not_a_key") and getattr(old, f.name) != getattr(new, f.name)
    ]
    needs_restart += [
        f"{section}.{key}"
        for section, key in RESTART_ONLY_KEYS
        if getattr(getattr(old, section), key) != getattr(getattr(new, section), key)
    ]
    return ReloadPlan(tuple(keep), tuple(restart), tuple(start), tuple(stop), tuple(needs_restart))


def error_text(e: Exception) -> str:
    """One line for a failed reload or stream start: a VoxnodeError's own words, else its type too."""
    return str(e) if isinstance(e, VoxnodeError) else f"{type(e).__name__}: {e}"


def running_config(config: Config, device: str | None, logger: logging.Logger = log) -> Config:
    """`config` with run's `--device` override, its warnings logged (on `logger`) as check-config prints
    them: those of the config that runs (with --device a file's `audio.device = ""` has a microphone), and
    said before a --device that is refused stops it. `run` at start and every reload (config_loader) alike."""
    running = config
    try:
        if device is not None:
            running = config.with_device(device)
    finally:
        for warning in running.warnings():
            logger.warning("%s", warning)
    return running


def config_loader(path: str | Path | None, device: str | None = None) -> Callable[[], Config]:
    """What SIGHUP re-reads: the same file and command-line overrides the daemon started with."""
    return lambda: running_config(load_config(path), device)


@dataclass
class Unstarted:
    stream: StreamConfig
    due: float  # time.monotonic() of the next try
    delay: float
    stats: SourceStats  # what health shows for it: a capture in backoff, with the reason


class StartRetries:
    """Streams a reload could not start (their pipeline could not be built: a model removed after the
    checks): retried from the main loop at the capture's retry delays while the others run."""

    def __init__(self) -> None:
        self._by_name: dict[str, Unstarted] = {}

    def __bool__(self) -> bool:
        return bool(self._by_name)

    def failed(self, stream: StreamConfig, error: str, audio: AudioConfig) -> tuple[float, bool]:
        """Note a failed start; returns the delay until the next try (doubling, as a device's) and
        whether `error` is a new reason (the first failure, or not the previous one's words): the
        caller logs a new reason at error level and its repeats at debug, as a capture does."""
        before = self._by_name.get(stream.name)
        delay = audio.retry_initial_s if before is None else min(before.delay * 2, audio.retry_max_s)
        stats = SourceStats(state="backoff", last_error=error, retry_in_s=delay)
        stats.device_errors = (before.stats.device_errors if before else 0) + 1
        self._by_name[stream.name] = Unstarted(stream, time.monotonic() + delay, delay, stats)
        return delay, before is None or before.stats.last_error != error

    def started(self, name: str) -> int:
        """`name` started: forget it; returns how many tries had failed (0: it was not waiting)."""
        gone = self._by_name.pop(name, None)
        return 0 if gone is None else gone.stats.device_errors

    def due(self, now: float) -> list[StreamConfig]:
        return [u.stream for u in self._by_name.values() if now >= u.due]

    def discard(self, name: str) -> None:
        self._by_name.pop(name, None)

    def snapshots(self) -> dict[str, dict]:
        """Shown among the streams' snapshots, as a capture in backoff."""
        return {n: {**u.stats.snapshot(), "queue_depth": 0, "dropped_frames": 0} for n, u in self._by_name.items()}


def reload_on_request(daemon: Daemon, hooks: Sequence[Hook]) -> None:
    """SIGHUP or a reload command, on the daemon's main thread: re-read the config, apply it or keep
    the running one, say which, and tell the hooks."""
    for hook in hooks:
        hook.on_reloading(daemon.view)
    if daemon.reloader is None:
        result = ReloadResult(ok=False, error="this run has no config file to re-read")
    else:
        try:
            new_config = daemon.reloader()
        except VoxnodeError as e:
            result = ReloadResult(ok=False, error=str(e))
        except Exception as e:  # a reload must never take the running daemon down
            log.exception("unexpected error while reading the config")
            result = ReloadResult(ok=False, error=f"{type(e).__name__}: {e}")
        else:
            try:
                result = daemon.reload(new_config)
            except Exception as e:  # a bug, not a config: still no reason to take the daemon down
                log.exception("unexpected error while applying the config")
                result = ReloadResult(ok=False, error=f"{error_text(e)} (part of it may be applied)")
    (log.info if result.ok else log.error)("config %s", result.summary())
    for hook in hooks:
        hook.on_reloaded(daemon.view, result)
