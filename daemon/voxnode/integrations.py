"""Optional outputs the CLI adds to the daemon: MQTT (sink + hook) and Prometheus (hook)."""

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


def build_integrations(config: Config) -> Integrations:
    out = Integrations()
    from voxnode.mqtt.service import build_mqtt, engine_info_from

    service = build_mqtt(config)
    if service is not None:
        out.mqtt = service
        out.sinks.append(service.sink)
        out.hooks.append(service)
    if config.health.prometheus:
        from voxnode.health.prometheus import PrometheusExporter

        if service is not None:
            def report(daemon, now, service=service):
                return service.last_health
        else:
            from voxnode.health.report import HealthMonitor
            from voxnode.mqtt.topics import node_id_for

            monitor = HealthMonitor(config.health, node_id_for(config.mqtt))

            def report(daemon, now):
                monitor.housekeeping(now)
                return monitor.collect(daemon.snapshot(), engine_info_from(daemon), None)
        try:
            out.hooks.append(PrometheusExporter(config.health, report))
        except Exception:
            if service is not None:
                service.publisher.close()
            raise
    return out
