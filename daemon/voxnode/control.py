"""What remote commands may ask of the daemon. `Daemon` implements it; tests can use a small fake."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol


class DaemonControl(Protocol):
    def stream_names(self) -> list[str]: ...

    def set_muted(self, stream: str, muted: bool) -> None:
        """Raises KeyError for an unknown stream."""

    def is_muted(self, stream: str) -> bool: ...

    def set_follow_up(self, stream: str, on: bool) -> None:
        """The stream's follow-up window on or off (wake.follow_up_s). Raises KeyError for a stream
        that is not running or listens for no wake word."""

    def follow_up(self, stream: str) -> bool | None:
        """Whether follow-up is on; None for a stream without a wake word."""

    def set_playing(self, stream: str, playing: bool) -> None:
        """The `playing` input: the node plays sound now (stream/playback.py). Raises KeyError for a
        stream that is not running."""

    def playing(self, stream: str) -> bool:
        """The `playing` input as last set (False for a stream that is not running)."""

    def request_reload(self) -> None:
        """Reload the configuration soon (as SIGHUP does); returns at once."""


def switch_stream(members: set[str], stream: str, on: bool, streams: Iterable[str]) -> None:
    """Put `stream` into `members` (the muted streams, the playing ones) or take it out; the KeyError
    DaemonControl's setters raise for a stream not among `streams`."""
    if stream not in streams:
        raise KeyError(stream)
    (members.add if on else members.discard)(stream)
