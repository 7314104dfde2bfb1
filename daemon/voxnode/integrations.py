"""Optional outputs the CLI adds to the daemon: MQTT (component + sink + hook), Prometheus (component +
hook), memory housekeeping (hook)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from voxnode.config import Config
from voxnode.lifecycle import Component, Hook
from voxnode.sinks import Sink

log = logging.getLogger(__name__)


@dataclass
class Integrations:
    sinks: list[Sink] = field(default_factory=list)
    hooks: list[Hook] = field(default_factory=list)
    components: list[Component] = field(default_factory=list)  # started by the daemon, in this order


def build_integrations(config: Config) -> Integrations:
    from voxnode.mqtt.service import build_mqtt

    out = Integrations()
    service = build_mqtt(config)
    if service is not None:
        out.components.append(service)
        out.sinks.append(service.sink)
        out.hooks.append(service)

        def report(daemon, now, service=service):
            return service.last_health  # built by the MQTT health report on the same tick
    else:
        # Without MQTT, malloc_trim and the leak watch still run (their findings go to the log).
        from voxnode.health.hook import HousekeepingHook
        from voxnode.health.report import HealthMonitor
        from voxnode.mqtt.topics import node_id_for

        housekeeping = HousekeepingHook(HealthMonitor(config.health, node_id_for(config.mqtt)),
                                        config.health.interval_s, lambda daemon: daemon.engine_info(),
                                        keep_report=config.health.prometheus)
        out.hooks.append(housekeeping)

        def report(daemon, now, housekeeping=housekeeping):
            return housekeeping.latest
    if config.health.prometheus:
        from voxnode.health.prometheus import PrometheusExporter

        exporter = PrometheusExporter(config.health, report)
        out.components.append(exporter)
        out.hooks.append(exporter)
    return out
