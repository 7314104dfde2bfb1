"""Who starts and stops what: a `Component` owns threads or servers, a `Hook` follows the main loop.

Every thread and server in voxnode has one owner with `start()` and `stop(deadline)`. The daemon
starts its components in the order they were registered (outputs, then recognition, then the
streams) and stops them in reverse with one deadline: capture stops first, the utterances in
flight are decoded next, and the outputs (MQTT) still carry the last finals before they close.

A hook owns nothing. The daemon calls it from its main thread (systemd notify and watchdog, MQTT
commands, health reports); it must return quickly. It is given a `HostView` (host_view.py), the parts
of the daemon hooks read and act on, never the daemon itself.

Below the daemon the same rules hold: an owner starts its children with `start_all` and stops them
with `stop_all`, passing its one deadline down (a stream: its worker, then its capture; recognition:
the decode scheduler, then the end-of-turn model; MQTT: the publisher, then the commands' thread).
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from voxnode.host_view import HostView
    from voxnode.reload import ReloadResult

log = logging.getLogger(__name__)

# The main loop's tick for a hook that does not say how often it needs one.
TICK_S = 0.1
# How long a shutdown may take: service.stop_timeout_s's default, and the bound of a failed start's
# rollback where the config is not at hand (start_all, Streams.start). One bound for every stop.
STOP_TIMEOUT_S = 5.0


class Component(ABC):
    """Owns threads or servers: nothing runs before `start()`, nothing is left after `stop()`."""

    @abstractmethod
    def start(self) -> None:
        """Start the threads or servers; raise a VoxnodeError saying what is wrong if that cannot work."""

    @abstractmethod
    def stop(self, deadline: float) -> None:
        """Finish the work in flight by `deadline` (time.monotonic()) where possible, then release
        every thread and server. Called once, and only after start() returned."""


def start_all(components: Sequence[Component], stop_timeout_s: float = STOP_TIMEOUT_S) -> None:
    """Start in order; if one fails, stop those already started (in reverse) and re-raise.

    The rollback is a shutdown like any other: its deadline is `stop_timeout_s` from now
    (service.stop_timeout_s where the caller has the config). Nothing is in flight yet, so the
    threads end at once; with a deadline of now, a thread that had not yet seen its stop was
    reported as not stopping in time (the end-of-turn model's, before every failed start's error)."""
    started: list[Component] = []
    try:
        for c in components:
            c.start()
            started.append(c)
    except BaseException:
        stop_all(started, time.monotonic() + stop_timeout_s)
        raise


def stop_all(components: Sequence[Component], deadline: float) -> None:
    """Stop in reverse order of starting. One failing stop does not keep the others running."""
    for c in reversed(components):
        try:
            c.stop(deadline)
        except Exception:
            log.exception("%s: stop failed", type(c).__name__)


class Hook:
    """Follows the daemon from its main thread. Override what you need; the rest does nothing."""

    @property
    def tick_interval_s(self) -> float:
        """How often tick() is needed, in seconds (read at every tick)."""
        return TICK_S

    def on_starting(self, host: HostView) -> None:
        """Before the components start (no stream captures yet)."""

    def on_ready(self, host: HostView) -> None:
        """The components have started."""

    def tick(self, host: HostView, now: float) -> None:
        """About every `tick_interval_s` while running."""

    def on_reloading(self, host: HostView) -> None:
        """Before the config is re-read."""

    def on_reloaded(self, host: HostView, result: ReloadResult) -> None:
        """After a new config was applied or rejected."""

    def on_stopping(self, host: HostView) -> None:
        """Before the components stop."""
