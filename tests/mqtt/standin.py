"""The daemon's side of MqttBridge, for the in-process MQTT tests (test_discovery, test_service,
tests/reliability): a config that points MQTT at the test broker, and the bridge wired as the daemon
wires it. The stand-in daemon they run against is voxnode.standin's (the benchmarks use it too); the
subprocess tests (test_payloads, test_outages) run the real Daemon.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tests.mqtt.broker import Broker
from voxnode import standin
from voxnode.config import Config
from voxnode.events import TranscriptEvent


def mqtt_config(tmp_path: Path, broker: Broker, streams: dict[str, str] | None = None, **mqtt) -> Config:
    """voxnode.standin's MQTT config for node "testnode" at `broker`, with fast reconnects, the spool in
    `tmp_path`; `streams`: [[streams]] name -> area (devices "null"), None = the single [audio] "mic"."""
    mqtt = {"reconnect_min_s": 0.2, "reconnect_max_s": 1.0, **mqtt}
    return standin.mqtt_config(broker.port, tmp_path / "spool.sqlite", "testnode", streams, **mqtt)


class WiredBridge:
    """An MqttBridge wired as the daemon wires it (Daemon.add_output, then the delivery): its health
    section, a spool in the config's delivery.spool_path with its cursor, and `emit`, which stores a
    final (giving it its seq and model) before the bridge handles it, as the daemon's sequencer does.
    Everything else is the bridge's own."""

    def __init__(self, config: Config, daemon, *, spool_max_messages: int = 100000, **bridge):
        from voxnode.config.delivery import DeliveryConfig
        from voxnode.delivery.wiring import Delivery
        from voxnode.health.reporter import HealthReporter
        from voxnode.mqtt.bridge import MqttBridge

        reporter = bridge.pop("reporter", None) or HealthReporter(config.health, "testnode", daemon)
        self.bridge = MqttBridge(config, reporter, **bridge)
        reporter.add_section("mqtt", self.bridge.mqtt_stats)
        delivery = DeliveryConfig(config.delivery.spool_path, spool_max_messages)
        self.delivery = Delivery(delivery, ["mqtt"], self.bridge._model_name, self.bridge.handle)
        self.bridge.attach(self.delivery.cursor("mqtt"))
        self.journal = self.delivery.journal
        self.spool = self.delivery.spool

    def emit(self, event: TranscriptEvent) -> None:
        if event.is_final and not event.recorded:
            try:
                event = self.journal.record(event)
            except Exception:  # what the sequencer does with a final it cannot store: it goes without a seq
                event = dataclasses.replace(event, seq=None, recorded=True)
        self.bridge.handle(event)

    def stop(self, deadline: float) -> None:
        self.bridge.stop(deadline)
        self.delivery.stop(deadline)

    def __getattr__(self, name: str):
        return getattr(self.bridge, name)
