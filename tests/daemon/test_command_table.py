"""Commands are routed by one table, whatever carried them: a handler per command, none missing."""

from __future__ import annotations

import pytest

from voxnode.command_table import ARGUMENTS, Command, CommandTable
from voxnode.config import Config
from voxnode.daemon import Daemon


def test_a_table_without_a_handler_for_every_command_is_refused():
    with pytest.raises(ValueError, match=r"missing \['memory'\], unknown \['shutdown'\]"):
        CommandTable({**{n: lambda d, c: None for n in ARGUMENTS if n != "memory"}, "shutdown": lambda d, c: None})


def test_each_command_reaches_its_handler_on_the_real_daemon():
    daemon = Daemon(Config(), [])  # the daemon's DaemonControl side: streams, mute, reload requests
    seen: list[str] = []
    table = CommandTable(
        {
            "mute": lambda d, c: d.set_muted(c.stream, True),
            "unmute": lambda d, c: d.set_muted(c.stream, False),
            "follow_up_on": lambda d, c: seen.append(f"follow_up_on {c.stream}"),
            "follow_up_off": lambda d, c: seen.append(f"follow_up_off {c.stream}"),
            "playing_on": lambda d, c: seen.append(f"playing_on {c.stream}"),
            "playing_off": lambda d, c: seen.append(f"playing_off {c.stream}"),
            "reload": lambda d, c: d.request_reload(),
            "health": lambda d, c: seen.append("health"),
            "memory": lambda d, c: seen.append(f"memory {c.id}"),
        }
    )
    table.run(daemon, Command("mute", "mic"))
    assert daemon.is_muted("mic")
    table.run(daemon, Command("unmute", "mic"))
    assert not daemon.is_muted("mic")
    table.run(daemon, Command("reload"))
    assert daemon._take_requests() == {"reload"}
    table.run(daemon, Command("health"))
    table.run(daemon, Command("memory", id="x1"))
    table.run(daemon, Command("follow_up_on", "mic"))
    assert seen == ["health", "memory x1", "follow_up_on mic"]
