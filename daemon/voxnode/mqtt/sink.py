"""The MQTT sink: finals go to the durable spool, partials to a small lossy queue. Never blocks."""

from __future__ import annotations

from voxnode.health.latency import LatencyWindows
from voxnode.mqtt.client import MqttPublisher


class MqttSink:
    def __init__(self, publisher: MqttPublisher, latency: LatencyWindows | None = None):
        self.publisher = publisher
        self.latency = latency or LatencyWindows()

    def emit(self, event: dict) -> None:
        kind = event.get("type")
        if kind == "final":
            self.publisher.submit_final(event)
            if isinstance(event.get("latency_ms"), (int, float)):
                self.latency.add(str(event.get("stream")), event["latency_ms"])
        elif kind == "partial":
            self.publisher.submit_partial(event)
        # level reports and other diagnostics stay local (stdout/log)
