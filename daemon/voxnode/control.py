"""What remote commands may ask of the daemon. `Daemon` implements it; tests can use a small fake."""

from __future__ import annotations

from typing import Protocol


class DaemonControl(Protocol):
    def stream_names(self) -> list[str]: ...

    def set_muted(self, stream: str, muted: bool) -> None:
        """Raises KeyError for an unknown stream."""

    def is_muted(self, stream: str) -> bool: ...

    def request_reload(self) -> None:
        """Reload the configuration soon (as SIGHUP does); returns at once."""
