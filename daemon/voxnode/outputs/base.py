"""The one shape of an output: a Component (`start()`, `stop(deadline)`) that handles events.

What an output may add, each optional:
- `health()`: its section of the health report, under its name (MQTT: "mqtt");
- `durable = True` and `attach(cursor)`: it delivers finals from the spool (voxnode.delivery) and
  acknowledges them there, so a final it has not delivered is delivered after a restart (stdout,
  MQTT, the webhook). With one durable output configured, every final gets its `seq` first;
- `hook()`: a `Hook` for work on the daemon's main thread (MQTT: commands, Home Assistant).

The daemon starts outputs before recognition and stops them after it, so they are up for the first
transcript and still up for the last one; `handle` runs on the sequencer's thread (transcripts) or the
stream's worker (level reports, wake words) and must not block for long.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar, Protocol

from voxnode.lifecycle import Component, Hook

if TYPE_CHECKING:
    from voxnode.config import Config
    from voxnode.delivery.cursor import SpoolCursor
    from voxnode.events import Event
    from voxnode.health.reporter import HealthReporter


class OutputContext:
    """What an output may be built from: the config, the health reporter, the command line's choice."""

    def __init__(self, config: Config, reporter: HealthReporter, stdout: bool = False):
        self.config = config
        self.reporter = reporter
        self.stdout = stdout  # `--stdout`: JSON lines on stdout instead of readable lines on the log


class Output(Component):
    name: ClassVar[str]  # its name in the table, in health and in the spool
    durable: ClassVar[bool] = False  # True: it delivers finals from the spool through a cursor

    @classmethod
    @abstractmethod
    def from_context(cls, ctx: OutputContext) -> Output | None:
        """The output the config (and command line) ask for, or None when not configured. Raises a
        VoxnodeError saying what is wrong for settings that cannot work, before anything starts."""

    @abstractmethod
    def handle(self, event: Event) -> None:
        """One event (a final with its seq, a partial, a wake word, a level report); any thread."""

    def start(self) -> None:
        """Nothing to start unless the output owns threads or servers."""

    def stop(self, deadline: float) -> None:
        """Nothing to stop unless the output owns threads or servers."""

    def health(self) -> Callable[[], dict] | None:
        """Its section of the health report (called at each report), or None for none."""
        return None

    def attach(self, cursor: SpoolCursor) -> None:
        """Durable outputs: the spool's finals not yet delivered by this output; before start()."""
        raise NotImplementedError(f"output {self.name} is not durable")

    def hook(self) -> Hook | None:
        """Work on the daemon's main thread, or None."""
        return None


class Sink(Protocol):
    """Something in-process that watches every event (a test, a benchmark), as the JSON an output
    would show; not an output."""

    def emit(self, event: dict) -> None: ...
