"""Optional Prometheus endpoint: the health report as gauges (`pip install 'voxnode[prometheus]'`).

Scrapes read the latest report (built by the health reporter on the daemon's main thread every
health.interval_s); a scrape never touches the daemon itself.
"""

from __future__ import annotations

import logging
from typing import Any

from voxnode.config.health import HealthConfig
from voxnode.errors import VoxnodeError
from voxnode.lifecycle import Component

log = logging.getLogger(__name__)


class PrometheusError(VoxnodeError):
    """The Prometheus endpoint cannot start (extra not installed, port taken)."""


def _families(report: dict):
    from prometheus_client.core import GaugeMetricFamily

    def g(name: str, doc: str, value, labels: dict | None = None):
        fam = GaugeMetricFamily(f"voxnode_{name}", doc, labels=list(labels) if labels else None)
        if value is not None:
            fam.add_metric(list(labels.values()) if labels else [], float(value))
        return fam

    proc = report.get("process") or {}
    mem = report.get("memory") or {}
    heap = mem.get("heap") or {}
    yield g("uptime_seconds", "Seconds since the daemon started.", report.get("uptime_s"))
    yield g(
        "process_cpu_percent", "Process CPU over the last health interval (100 = one core).", proc.get("cpu_percent")
    )
    yield g("process_rss_bytes", "Resident set size.", proc.get("rss_bytes"))
    yield g("heap_in_use_bytes", "glibc heap in use (mallinfo2).", heap.get("in_use_bytes"))
    yield g("heap_free_bytes", "glibc heap freed but not returned to the OS.", heap.get("free_bytes"))
    yield g(
        "malloc_trim_returned_bytes_total",
        "RSS returned by malloc_trim since start.",
        (mem.get("trim") or {}).get("returned_bytes_total"),
    )
    yield g(
        "leak_suspected",
        "1 when RSS grows steadily beyond health.leak_threshold_mb.",
        (mem.get("leak") or {}).get("suspected"),
    )
    thermal = report.get("thermal") or {}
    yield g("soc_temperature_celsius", "Hottest thermal zone.", thermal.get("soc_temp_c"))
    throttled = thermal.get("throttled")
    yield g(
        "throttled",
        "1 when the SoC is throttled now (Raspberry Pi).",
        None if throttled is None else throttled.get("throttled"),
    )
    model = report.get("model") or {}
    yield g(
        "model_loaded", "1 when the speech model is loaded.", model.get("loaded"), {"model": str(model.get("name"))}
    )
    stream_fams: dict[str, GaugeMetricFamily] = {}
    for name, st in (report.get("streams") or {}).items():
        for key, value in st.items():
            if isinstance(value, (bool, int, float)):
                fam = stream_fams.get(key)
                if fam is None:
                    fam = stream_fams[key] = GaugeMetricFamily(
                        f"voxnode_stream_{key}", f"Per-stream {key}.", labels=["stream"]
                    )
                fam.add_metric([name], float(value))
    yield from stream_fams.values()
    for key, value in (report.get("mqtt") or {}).items():
        if isinstance(value, (bool, int, float)):
            yield g(f"mqtt_{key}", f"MQTT {key}.", value)


class PrometheusExporter(Component):
    """Serves the health reporter's latest report on health.prometheus_host:port, from start() to stop().

    Subscribe `update` to the HealthReporter; a scrape reads the report it was last given.
    """

    def __init__(self, config: HealthConfig):
        self.config = config
        self.latest: dict | None = None
        self._server: Any = None
        try:
            import prometheus_client  # noqa: F401  (checked here, before anything starts)
        except ImportError:
            raise PrometheusError(
                "health.prometheus = true needs prometheus-client: pip install 'voxnode[prometheus]'"
            ) from None

    def update(self, report: dict) -> None:
        self.latest = report

    def start(self) -> None:
        from prometheus_client import CollectorRegistry, start_http_server

        exporter = self

        class _Collector:
            def collect(self):
                if exporter.latest is not None:
                    yield from _families(exporter.latest)

        self.registry = CollectorRegistry()
        self.registry.register(_Collector())
        c = self.config
        try:
            self._server, _ = start_http_server(c.prometheus_port, c.prometheus_host, registry=self.registry)
        except OSError as e:
            raise PrometheusError(
                f"Prometheus endpoint {c.prometheus_host}:{c.prometheus_port}: "
                f"{e.strerror or e} (set health.prometheus_port)"
            ) from None
        log.info("Prometheus metrics on http://%s:%d/metrics", c.prometheus_host, c.prometheus_port)

    def stop(self, deadline: float) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()  # shutdown() only stops serving; the port stays bound without this
            self._server = None
