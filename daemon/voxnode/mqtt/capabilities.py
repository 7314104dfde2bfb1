"""What a node's health reports say it can feed: the optional Home Assistant entities follow it
(mqtt/discovery.py), so none is announced that would stay `unknown` forever."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Capabilities:
    """Which optional health fields this node reports: each enables the entity that reads it.

    A release that measures a field puts its key in every report (null until measured), so the
    first report decides; the service keeps the union of every report of a run (`|`), so an
    entity once announced is not withdrawn when one report lacks a value.
    """

    temperature: bool = False  # thermal.soc_temp_c is a number: the board has a thermal zone
    throttling: bool = False  # thermal.throttled is an object: Raspberry Pi firmware flags
    spool_problem: bool = False  # mqtt.spool_writable (and spool_error, why not)
    finals_lost: bool = False  # mqtt.unstored_lost
    noise_floor: frozenset[str] = frozenset()  # streams whose report has noise_floor_dbfs

    @classmethod
    def from_health(cls, report: dict) -> Capabilities:
        thermal = report.get("thermal") or {}
        mqtt = report.get("mqtt") or {}
        streams = report.get("streams") or {}
        return cls(
            temperature=thermal.get("soc_temp_c") is not None,
            throttling=thermal.get("throttled") is not None,
            spool_problem="spool_writable" in mqtt,
            finals_lost="unstored_lost" in mqtt,
            noise_floor=frozenset(
                name for name, st in streams.items() if isinstance(st, dict) and "noise_floor_dbfs" in st
            ),
        )

    def __or__(self, other: Capabilities) -> Capabilities:
        return Capabilities(
            temperature=self.temperature or other.temperature,
            throttling=self.throttling or other.throttling,
            spool_problem=self.spool_problem or other.spool_problem,
            finals_lost=self.finals_lost or other.finals_lost,
            noise_floor=self.noise_floor | other.noise_floor,
        )
