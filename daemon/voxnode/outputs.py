"""The optional outputs `[mqtt]` and `[health]` ask for, and the `[wyoming]` server, added to a
daemon before it runs.

MQTT is a component (its threads), a sink (transcripts), a hook (commands on the main thread) and
the journal that gives finals their seq (the daemon's sequencer stores each final there first);
Prometheus is a component (its HTTP server) that reads the daemon's health reporter at each scrape;
the Wyoming server is a component that submits to the recognition's decode scheduler (`add_server`).
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
        mqtt.restore_mutes(daemon)  # before any stream captures: a mute survives a restart
    if config.health.prometheus:
        from voxnode.health.prometheus import PrometheusExporter

        daemon.add_component(PrometheusExporter(config.health, daemon.reporter))
    if config.wyoming.enabled:
        from voxnode.wyoming_stt.server import WyomingServer

        wyoming = WyomingServer(config, daemon.recognition)
        daemon.add_server(wyoming)
        daemon.reporter.add_section("wyoming", wyoming.health)
