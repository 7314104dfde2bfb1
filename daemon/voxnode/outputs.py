"""The optional outputs `[mqtt]` and `[health]` ask for, added to a daemon before it runs.

MQTT is a component (its threads), a sink (transcripts), a hook (commands on the main thread) and
the journal that gives finals their seq (the daemon's sequencer stores each final there first);
Prometheus is a component (its HTTP server) that reads the daemon's health reporter at each scrape.
"""

from __future__ import annotations

from voxnode.daemon import Daemon


def add_outputs(daemon: Daemon) -> None:
    """Raises VoxnodeError subclasses on settings that cannot work (before anything starts)."""
    config = daemon.config
    if config.mqtt.enabled:
        from voxnode.mqtt.bridge import MqttBridge

        mqtt = MqttBridge(config, daemon.reporter)
        daemon.add_component(mqtt)
        daemon.add_sink(mqtt)
        daemon.add_hook(mqtt)
        daemon.use_journal(mqtt.journal)
    if config.health.prometheus:
        from voxnode.health.prometheus import PrometheusExporter

        daemon.add_component(PrometheusExporter(config.health, daemon.reporter))
