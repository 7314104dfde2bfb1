"""The MQTT sink: finals go to the durable spool, partials to a small lossy queue. Never blocks."""

from __future__ import annotations

from voxnode.mqtt.client import MqttPublisher


class MqttSink:
    def __init__(self, publisher: MqttPublisher):
        self.publisher = publisher

    def emit(self, event: dict) -> None:
        kind = event.get("type")
        if kind == "final":
            self.publisher.submit_final(event)
        elif kind == "partial":
            self.publisher.submit_partial(event)
        # level reports and other diagnostics stay local (stdout/log)

    def close(self) -> None:
        # The daemon closes sinks after the pipeline has drained its last finals.
        self.publisher.close()
