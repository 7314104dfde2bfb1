"""Where events go: stdout JSON lines, the log, MQTT, ...

A sink only takes events. An output that needs a thread or a connection (MQTT) is also a
`voxnode.lifecycle.Component`, which the daemon starts before the first event and stops after
the last.
"""

from typing import Protocol


class Sink(Protocol):
    def emit(self, event: dict) -> None:
        """Take one event (a JSON-able dict with a "type"), from any thread. Must not block for long."""
