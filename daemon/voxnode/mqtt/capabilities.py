"""What a node's health reports say it can feed: the optional Home Assistant entities follow it
(mqtt/discovery.py), so none is announced that would stay `unknown` forever."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Capabilities:
    """Which board-dependent health fields this node reports: each enables the entity that reads it.

    Every other entity reads a field that every report carries (docs/schemas/health.json), so it
    is always announced. The first report decides; the service keeps the union of every report of
    a run (`|`), so an entity once announced is not withdrawn when one report lacks a value.
    """

    temperature: bool = False  # thermal.soc_temp_c is a number: the board has a thermal zone
    throttling: bool = False  # thermal.throttled is an object: Raspberry Pi firmware flags

    @classmethod
    def from_health(cls, report: dict) -> Capabilities:
        thermal = report.get("thermal") or {}
        return cls(
            temperature=thermal.get("soc_temp_c") is not None,
            throttling=thermal.get("throttled") is not None,
        )

    def __or__(self, other: Capabilities) -> Capabilities:
        return Capabilities(
            temperature=self.temperature or other.temperature,
            throttling=self.throttling or other.throttling,
        )
