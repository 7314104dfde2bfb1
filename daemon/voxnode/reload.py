"""What a config reload changes: which streams keep running, which restart, what needs a full restart.

Pure functions of (old config, new config), so the rules are testable without
threads or devices; `Daemon.reload` carries the plan out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from voxnode.config import Config, load_config

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
        if f.name not in handled and getattr(old, f.name) != getattr(new, f.name)
    ]
    needs_restart += [
        f"{section}.{key}"
        for section, key in RESTART_ONLY_KEYS
        if getattr(getattr(old, section), key) != getattr(getattr(new, section), key)
    ]
    return ReloadPlan(tuple(keep), tuple(restart), tuple(start), tuple(stop), tuple(needs_restart))


def config_loader(path: str | Path | None, device: str | None = None) -> Callable[[], Config]:
    """What SIGHUP re-reads: the same file and command-line overrides the daemon started with."""

    def load() -> Config:
        config = load_config(path)
        return config.with_device(device) if device else config

    return load
