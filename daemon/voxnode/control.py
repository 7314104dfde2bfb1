"""What remote commands may ask of the daemon. `Daemon` implements it; tests can use a small fake."""

from __future__ import annotations

from typing import Protocol


class DaemonControl(Protocol):
    def stream_names(self) -> list[str]: ...

    def wake_streams(self) -> frozenset[str]:
        """The streams that listen for a wake word (Home Assistant's wake event entities)."""

    def set_muted(self, stream: str, muted: bool) -> None:
        """Raises KeyError for an unknown stream."""

    def request_reload(self) -> None:
        """Reload the configuration soon (as SIGHUP does); returns at once."""
