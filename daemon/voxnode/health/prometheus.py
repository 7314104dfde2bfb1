"""Optional Prometheus endpoint (`pip install 'voxnode[prometheus]'`): the metrics of
health/metrics.py plus the standard process collector, on health.prometheus_host:port.

Each scrape reads the daemon's live state (health/metrics.py); nothing waits for the next health
report. The HTTP server is health/metrics_server.py (one thread and a selector, bounded connections,
read timeouts: prometheus-client's own server gave each connection a thread and listened with a
backlog of 5), owned by this component.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from voxnode.config.health import HealthConfig
from voxnode.config.wording import cannot_listen
from voxnode.errors import VoxnodeError
from voxnode.health.metrics_server import MetricsServer, render_registry
from voxnode.outputs.base import Output, OutputContext

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from voxnode.events import Event
    from voxnode.health.reporter import HealthReporter

log = logging.getLogger(__name__)


class PrometheusError(VoxnodeError):
    """The Prometheus endpoint cannot start (extra not installed, port taken)."""


def make_registry(reporter: HealthReporter) -> CollectorRegistry:
    """voxnode's metrics and the process_* ones, in a registry of their own (not the global one)."""
    from prometheus_client import CollectorRegistry, ProcessCollector

    from voxnode.health.metrics import VoxnodeCollector

    registry = CollectorRegistry()
    ProcessCollector(registry=registry)
    registry.register(VoxnodeCollector(reporter))
    return registry


class PrometheusExporter(Output):
    """The "prometheus" output: serves `make_registry(reporter)` over HTTP from start() to stop(). It
    takes no events: each scrape reads the daemon's live state."""

    name = "prometheus"

    def __init__(self, config: HealthConfig, reporter: HealthReporter):
        self.config = config
        self.reporter = reporter
        self._server: MetricsServer | None = None
        try:
            import prometheus_client  # noqa: F401  (checked here, before anything starts)
        except ImportError:
            raise PrometheusError(
                "health.prometheus = true needs prometheus-client: pip install 'voxnode[prometheus]'"
            ) from None

    @classmethod
    def from_context(cls, ctx: OutputContext) -> PrometheusExporter | None:
        return cls(ctx.config.health, ctx.reporter) if ctx.config.health.prometheus else None

    def handle(self, event: Event) -> None:
        """Nothing: the metrics are read at each scrape."""

    def start(self) -> None:
        c = self.config
        server = MetricsServer(c.prometheus_host, c.prometheus_port, render_registry(make_registry(self.reporter)))
        try:
            server.start()
        except OSError as e:  # it said "Prometheus endpoint h:p: ..." without the config file
            in_use = "is another program (another voxnode?) using the port?"
            where = ("health.prometheus_host", c.prometheus_host, "health.prometheus_port", c.prometheus_port)
            raise PrometheusError(cannot_listen(*where, e, in_use)) from None
        self._server = server
        log.info("Prometheus metrics on http://%s:%d/metrics", c.prometheus_host, c.prometheus_port)

    def stop(self, deadline: float) -> None:
        if self._server is not None:
            self._server.stop(min(deadline, time.monotonic() + 1.0))  # the port is free once this returns
            self._server = None
