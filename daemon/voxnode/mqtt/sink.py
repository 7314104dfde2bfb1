"""The MQTT sink: finals come here already stored in the spool (with their seq); it wakes the publisher.

Partials go to a small lossy queue. A final the spool could not store (`"seq": null`) is handed to the
publisher to be sent from memory. Never blocks, except for a final that did not come through the
daemon's sequencer (no `seq` key: a script or test emitting directly), which is recorded here first.
"""

from __future__ import annotations

import logging

from voxnode.health.latency import LatencyWindows
from voxnode.mqtt.client import MqttPublisher
from voxnode.mqtt.journal import FinalsJournal

log = logging.getLogger("voxnode.mqtt")


class MqttSink:
    def __init__(self, publisher: MqttPublisher, journal: FinalsJournal, latency: LatencyWindows | None = None):
        self.publisher = publisher
        self.journal = journal
        self.latency = latency or LatencyWindows()

    def emit(self, event: dict) -> None:
        kind = event.get("type")
        if kind == "final":
            if "seq" not in event:
                try:
                    event = self.journal.record(event)
                except Exception:  # noqa: BLE001 - a malformed event (a bug upstream) must not stop later ones
                    self.publisher.stats.bad_events += 1
                    log.exception("MQTT: cannot store final %r; skipped", event)
                    return
            if event["seq"] is None:
                self.publisher.submit_unstored(event)
            else:
                self.publisher.submit_stored()
            if isinstance(event.get("latency_ms"), (int, float)):
                self.latency.add(str(event.get("stream")), event["latency_ms"])
        elif kind == "partial":
            self.publisher.submit_partial(event)
        # level reports and other diagnostics stay local (stdout/log)

    def close(self) -> None:
        # The daemon closes sinks after the pipeline has drained its last finals.
        self.publisher.close()
