"""Where events go: stdout JSON lines, MQTT, ..."""

from typing import Protocol


class Sink(Protocol):
    def emit(self, event: dict) -> None:
        """Take one event (a JSON-able dict with a "type"). Must not block the caller for long."""

    def close(self) -> None:
        """Flush and release resources."""
