"""The MQTT publisher's counters and link state: health reports them under `mqtt`
(docs/schemas/health.json). Written by the publisher and paho's threads, read by the health report."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class MqttStats:
    connected: bool = False
    connects: int = 0
    disconnects: int = 0
    published: int = 0  # finals acknowledged by the broker
    rejected: int = 0  # refusals by the broker (v5 PUBACK error, e.g. ACL), retries included
    held_seq: int | None = None  # the refused final holding back the later ones, until the broker takes it
    retry_in_s: float | None = None  # when it is tried again
    partials_dropped: int = 0
    finals_refused: int = 0  # finals without a durable copy that could not be held in memory; logged as errors
    unstored_lost: int = 0  # finals without a durable copy the broker refused: they are gone (logged)
    last_error: str = ""
    last_connect_wall: float = 0.0
    inflight: int = 0
    bad_events: int = 0  # events the publisher could not handle (a bug upstream); logged with a traceback
