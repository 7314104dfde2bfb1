"""Optional outputs the CLI adds to the daemon: MQTT (sink + hook), Prometheus (hook), memory housekeeping."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from voxnode.config import Config

log = logging.getLogger(__name__)


@dataclass
class Integrations:
    sinks: list = field(default_factory=list)
    hooks: list = field(default_factory=list)
    mqtt: object | None = None  # MqttService when enabled
    journal: object | None = None  # gives finals their durable seq (the MQTT spool): Daemon(journal=...)


def build_integrations(config: Config) -> Integrations:
    from voxnode.mqtt.service import build_mqtt, engine_info_from

    out = Integrations()
    service = build_mqtt(config)
    if service is not None:
        out.mqtt = service
        out.journal = service.journal
        out.sinks.append(service.sink)
        out.hooks.append(service)

        def report(daemon, now, service=service):
            return service.last_health  # built by the MQTT health report on the same tick
    else:
        # Without MQTT, malloc_trim and the leak watch still run (their findings go to the log).
        from voxnode.health.hook import HousekeepingHook
        from voxnode.health.report import HealthMonitor
        from voxnode.mqtt.topics import node_id_for

        housekeeping = HousekeepingHook(
            HealthMonitor(config.health, node_id_for(config.mqtt)),
            config.health.interval_s,
            engine_info_from,
            keep_report=config.health.prometheus,
        )
        out.hooks.append(housekeeping)

        def report(daemon, now, housekeeping=housekeeping):
            return housekeeping.latest

    if config.health.prometheus:
        from voxnode.health.prometheus import PrometheusExporter

        try:
            out.hooks.append(PrometheusExporter(config.health, report))
        except Exception:
            if service is not None:
                service.publisher.close()
            raise
    return out
