"""Remote commands by name: what each takes and the handler that carries it out, whatever transport
carried it (MQTT's cmd and mute/set topics today; mqtt/commands.py parses those payloads).

One table, as in Frigate's dispatcher: a transport parses a payload into a `Command` naming one of
`ARGUMENTS`, and `CommandTable.run` calls that command's handler on the daemon's main thread. Adding
a command is one line in ARGUMENTS and one handler; the table refuses to be built with one missing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from voxnode.control import DaemonControl

# command name -> the arguments it requires (besides "cmd", and an optional correlation "id")
ARGUMENTS: dict[str, tuple[str, ...]] = {
    "mute": ("stream",),
    "unmute": ("stream",),
    "follow_up_on": ("stream",),
    "follow_up_off": ("stream",),
    "playing_on": ("stream",),
    "playing_off": ("stream",),
    "reload": (),
    "health": (),
    "memory": (),
}


@dataclass(frozen=True)
class Command:
    name: str
    stream: str | None = None
    id: str | None = None


Handler = Callable[[DaemonControl, Command], None]


class CommandTable:
    def __init__(self, handlers: Mapping[str, Handler]):
        missing, unknown = set(ARGUMENTS) - set(handlers), set(handlers) - set(ARGUMENTS)
        if missing or unknown:
            raise ValueError(f"command handlers: missing {sorted(missing)}, unknown {sorted(unknown)}")
        self._handlers = dict(handlers)

    def run(self, daemon: DaemonControl, command: Command) -> None:
        """Main thread. A command always names one of ARGUMENTS: the parsers refuse any other."""
        self._handlers[command.name](daemon, command)
