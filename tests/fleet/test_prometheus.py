"""What a running daemon serves to Prometheus: the documented list, by the conventions (promtool), and
what a real Prometheus makes of it (its latency histogram through PromQL, the dashboard's and the
alert rules' queries)."""

from __future__ import annotations

import json
import math
import re
import subprocess
import time

import pytest

from tests.fleet.conftest import MONITORING, NODE, PROMTOOL, get, needs_prometheus
from tests.helpers import wait_until

pytest.importorskip("prometheus_client")
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from voxnode.health.metrics import METRICS  # noqa: E402

ROOT = MONITORING.parent
# Families this run must serve: MQTT and a webhook on, one stream, finals decoded. Absent here by design:
# thermal and throttling (no thermal zone), noise floor (issue 9).
MUST_SERVE = {
    "voxnode_build_info",
    "voxnode_node_info",
    "voxnode_start_time_seconds",
    "voxnode_model_loaded",
    "voxnode_stream_state",
    "voxnode_stream_frames_total",
    "voxnode_stream_dropped_frames_total",
    "voxnode_stream_audio_age_seconds",
    "voxnode_stream_finals_total",
    "voxnode_stream_last_final_timestamp_seconds",
    "voxnode_final_latency_seconds",
    "voxnode_decode_seconds",
    "voxnode_decode_busy_seconds_total",
    "voxnode_decode_jobs_completed_total",
    "voxnode_mqtt_connected",
    "voxnode_mqtt_backlog_messages",
    "voxnode_mqtt_published_total",
    "voxnode_mqtt_spool_writable",
    "voxnode_mqtt_unstored_total",
    "voxnode_mqtt_unstored_lost_total",
    "voxnode_delivery_spool_messages",
    "voxnode_delivery_spool_writable",
    "voxnode_delivery_pending_messages",
    "voxnode_delivery_next_seq",
    "voxnode_webhook_backlog_messages",
    "voxnode_webhook_delivered_total",
    "voxnode_webhook_failures_total",
    "voxnode_webhook_lost_total",
}


def scrape_with_finals(daemon, n: int = 2) -> str:
    text = ""

    def ready() -> bool:
        nonlocal text
        try:
            text = get(daemon.url)
        except OSError:
            return False
        pattern = r"^voxnode_final_latency_seconds_count\{node=\"" + NODE + r"\",stream=\"mic\"\} (\S+)$"
        m = re.search(pattern, text, re.M)
        return m is not None and float(m.group(1)) >= n

    assert wait_until(ready, timeout=120, step=0.5), f"no {n} finals in the metrics; log:\n{daemon.log()[-3000:]}"
    return text


def served_names(text: str) -> dict[str, str]:
    """Exposed family name (counters with _total) -> type."""
    out = {}
    for fam in text_string_to_metric_families(text):
        name = fam.name + "_total" if fam.type == "counter" else fam.name
        out[name] = fam.type
    return out


def documented_names() -> set[str]:
    """The metric names in docs/fleet.md's table."""
    doc = (ROOT / "docs" / "fleet.md").read_text()
    return set(re.findall(r"^\| `(voxnode_[a-z0-9_]+)`", doc, re.M))


def test_metric_list_is_documented():
    from voxnode.health.section_metrics import SECTIONS

    assert documented_names() == set(METRICS)
    assert {n for names in SECTIONS.values() for n in names.values()} <= set(METRICS)  # each section's series
    for d in METRICS.values():
        assert (d.kind == "counter") == d.name.endswith("_total"), d.name
        assert not re.search(r"_(ms|percent|pct|mb|kb)(_|$)", d.name), f"{d.name}: not a base unit"


@needs_prometheus
def test_served_metrics_pass_promtool_and_are_the_documented_ones(scraped_daemon):
    text = scrape_with_finals(scraped_daemon)
    lint = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True)
    assert lint.returncode == 0 and not lint.stdout.strip() and not lint.stderr.strip(), lint.stdout + lint.stderr
    served = served_names(text)
    voxnode = {n: t for n, t in served.items() if n.startswith("voxnode_")}
    assert set(voxnode) <= set(METRICS), set(voxnode) - set(METRICS)  # nothing outside the fixed list
    assert set(voxnode) >= MUST_SERVE, MUST_SERVE - set(voxnode)
    for name, kind in voxnode.items():
        assert kind == METRICS[name].kind, (name, kind)
    assert {"process_resident_memory_bytes", "process_cpu_seconds_total", "process_start_time_seconds"} <= set(served)
    for fam in text_string_to_metric_families(text):
        if fam.name.startswith("voxnode_"):
            assert all(s.labels.get("node") == NODE for s in fam.samples), fam.name
    build = next(f for f in text_string_to_metric_families(text) if f.name == "voxnode_build_info").samples[0]
    assert build.labels["model"] == "whisper-tiny.en" and build.labels["runtime"].startswith("ai-edge-litert")


@needs_prometheus
def test_histograms_are_live_and_agree_with_the_finals(scraped_daemon):
    text = scrape_with_finals(scraped_daemon)
    # Scraped at any moment, not every health interval: the count follows the finals as they come.
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    lat = {s.name: s for s in fams["voxnode_final_latency_seconds"].samples if "le" not in s.labels}
    count = lat["voxnode_final_latency_seconds_count"].value
    finals = list(scraped_daemon.finals)
    assert count <= len(finals) + 1  # a final may be on its way to stdout
    ms = [f["latency_ms"] for f in finals[: int(count)]]
    assert lat["voxnode_final_latency_seconds_sum"].value == pytest.approx(sum(ms) / 1000.0, abs=0.001 * len(ms))
    decode_kinds = {s.labels["kind"] for s in fams["voxnode_decode_seconds"].samples}
    assert decode_kinds <= {"final", "speculative", "partial", "wake"} and decode_kinds


@needs_prometheus
def test_real_prometheus_scrapes_the_daemon_and_queries_its_latency_histogram(scraped_daemon, prometheus_server):
    scrape_with_finals(scraped_daemon)
    count_q = f'voxnode_final_latency_seconds_count{{job="voxnode",node="{NODE}",stream="mic"}}'

    def scraped() -> bool:
        r = prometheus_server.query(count_q)["data"]["result"]
        return bool(r) and float(r[0]["value"][1]) >= 2

    assert wait_until(scraped, timeout=60, step=0.5), prometheus_server.log()[-3000:]
    r = prometheus_server.query(
        f'histogram_quantile(0.95, sum by (le) (voxnode_final_latency_seconds_bucket{{node="{NODE}"}}))'
    )
    assert r["status"] == "success", r
    p95 = float(r["data"]["result"][0]["value"][1])
    worst = max(f["latency_ms"] for f in scraped_daemon.finals) / 1000.0
    assert math.isfinite(p95) and 0 < p95 <= 10.0
    # The estimate lies in the bucket of the real values: at most the next bucket bound above the worst.
    bounds = [
        float(b["metric"]["le"])
        for b in prometheus_server.query("voxnode_final_latency_seconds_bucket")["data"]["result"]
    ]
    assert p95 <= min(b for b in bounds if b >= worst)
    up = prometheus_server.query('up{job="voxnode"}')["data"]["result"]
    assert up and up[0]["value"][1] == "1"


@needs_prometheus
def test_real_prometheus_sees_the_delivery_and_webhook_sections(scraped_daemon, prometheus_server):
    """The spool's and the webhook's health sections as series (issue 25 had left them out): each
    durable output's pending count from the start, the webhook's counters as the endpoint saw them."""
    scrape_with_finals(scraped_daemon)
    endpoint = scraped_daemon.endpoint
    assert endpoint.wait_for(2), scraped_daemon.log()[-3000:]

    def value(expr: str) -> dict[str, float]:
        r = prometheus_server.query(expr)
        assert r["status"] == "success", (expr, r)
        return {x["metric"].get("output", ""): float(x["value"][1]) for x in r["data"]["result"]}

    def delivered() -> bool:
        got = value(f'voxnode_webhook_delivered_total{{job="voxnode",node="{NODE}"}}')
        return bool(got) and got[""] >= 2

    assert wait_until(delivered, timeout=60, step=0.5), prometheus_server.log()[-3000:]
    # Every durable output has its pending series (stdout, MQTT, the webhook), a count of finals, none lost.
    pending = value(f'voxnode_delivery_pending_messages{{job="voxnode",node="{NODE}"}}')
    assert set(pending) == {"stdout", "mqtt", "webhook"}, pending
    assert all(v >= 0 and v == int(v) for v in pending.values()), pending
    # The endpoint answered the first POST 503: a failure Prometheus sees, and the final retried.
    assert value("voxnode_webhook_failures_total")[""] >= 1
    assert value("voxnode_webhook_lost_total")[""] == 0
    assert value("voxnode_delivery_spool_writable")[""] == 1
    assert value("voxnode_delivery_unstored_total")[""] == 0
    # The counter is the endpoint's own count, at most what it accepted since (a scrape a second apart).
    accepted = len(endpoint.finals())
    assert 2 <= value("voxnode_webhook_delivered_total")[""] <= accepted
    # seq numbers the finals from 1: with two delivered, the next is 3 or more; the endpoint got them in order.
    seqs = [f["seq"] for f in endpoint.finals()]
    assert seqs == sorted(seqs) and value("voxnode_delivery_next_seq")[""] >= 3
    backlog = value("voxnode_webhook_backlog_messages")[""]
    assert backlog >= 0 and backlog == int(backlog)


def dashboard_exprs() -> list[str]:
    dash = json.loads((MONITORING / "grafana" / "voxnode-fleet.json").read_text())
    return [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]


def as_query(expr: str) -> str:
    return (
        expr.replace("$__rate_interval", "30s")
        .replace('"$job"', '"voxnode"')
        .replace('"$node"', '".+"')
        .replace('"$stream"', '".+"')
    )


@needs_prometheus
def test_dashboard_queries_run_on_prometheus_and_show_the_daemon(scraped_daemon, prometheus_server):
    scrape_with_finals(scraped_daemon)
    assert wait_until(
        lambda: prometheus_server.query("voxnode_final_latency_seconds_count")["data"]["result"], timeout=60
    )
    # rate() needs two scrapes of the same series (scraped every second): its first answer, not a 2 s sleep.
    assert wait_until(
        lambda: prometheus_server.query("rate(voxnode_final_latency_seconds_count[30s])")["data"]["result"], timeout=30
    )
    empty = []
    for expr in dashboard_exprs():
        r = prometheus_server.query(as_query(expr))
        assert r["status"] == "success", (expr, r)
        if not r["data"]["result"]:
            empty.append(expr)
    # Only what this machine or this release lacks may be empty: SoC sensors, the noise floor
    # (issue 9), rates of things that did not happen (dropped frames, lost finals), and the microphone's
    # own checks (digital silence, clipping: this daemon reads a file, not a microphone).
    allowed = ("soc_", "noise_floor", "dropped_frames", "finals_lost", "suppressed", "rejected", "decode_pending")
    allowed += ("digital_silence", "clipped_frames")
    assert all(any(a in e for a in allowed) for e in empty), empty
    rules = json.loads(get(f"http://127.0.0.1:{prometheus_server.port}/api/v1/rules"))["data"]["groups"][0]["rules"]
    assert len(rules) == 17 and all(r["health"] in ("ok", "unknown") for r in rules), rules


@needs_prometheus
def test_node_exporter_textfile_copy_passes_promtool(scraped_daemon, tmp_path):
    """The timer's command, run as written in the unit (URL and folder pointed at this test)."""
    unit = (MONITORING / "node-exporter" / "voxnode-textfile.service").read_text()
    command = re.search(r"^ExecStart=/bin/sh -c '(.*)'$", unit, re.M).group(1)
    assert "$" not in command.replace("^(", "")  # systemd would substitute a $VAR
    command = command.replace("http://127.0.0.1:9464/metrics", scraped_daemon.url)
    command = command.replace("/var/lib/prometheus/node-exporter", str(tmp_path))
    scrape_with_finals(scraped_daemon)
    subprocess.run(["/bin/sh", "-c", command], check=True, timeout=30)
    text = (tmp_path / "voxnode.prom").read_text()
    assert not (tmp_path / "voxnode.prom.tmp").exists()
    lint = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True)
    assert lint.returncode == 0 and not lint.stdout.strip(), lint.stdout + lint.stderr
    names = served_names(text)
    assert not [n for n in names if n.startswith("process_")]  # node_exporter has its own
    assert set(names) >= MUST_SERVE


def test_a_quiet_node_serves_its_histograms_from_the_start(tmp_path):
    """Issue 27 item 8. Before, a histogram's series appeared with its first observation: a quiet node
    served no voxnode_final_latency_seconds at all, and absent() alerts fired on a healthy node."""
    import dataclasses

    from voxnode.config import Config
    from voxnode.config.audio import StreamConfig
    from voxnode.config.health import HealthConfig
    from voxnode.health.prometheus import PrometheusExporter
    from voxnode.health.reporter import HealthReporter
    from voxnode.mqtt.localbroker import free_port
    from voxnode.standin import StandInDaemon
    from voxnode.wyoming_stt.request import OBSERVED_AS

    base = Config()
    config = dataclasses.replace(
        base,
        streams=tuple(StreamConfig(name=n, device="null") for n in ("kitchen", "hall")),
        wyoming=dataclasses.replace(base.wyoming, enabled=True),
    )
    source = StandInDaemon(config)
    reporter = HealthReporter(HealthConfig(), "n1", source)
    port = free_port()
    exp = PrometheusExporter(HealthConfig(prometheus=True, prometheus_port=port), reporter)
    exp.start()
    url = f"http://127.0.0.1:{port}/metrics"

    def histograms() -> tuple[str, dict]:
        text = get(url)
        out: dict = {}
        for fam in text_string_to_metric_families(text):
            if fam.type == "histogram" and fam.name.startswith("voxnode_"):
                for s in fam.samples:
                    key = tuple(sorted((k, v) for k, v in s.labels.items() if k not in ("le", "node")))
                    out.setdefault(fam.name, {}).setdefault(key, []).append((s.name, s.labels.get("le"), s.value))
        return text, out

    try:
        text, quiet = histograms()
        reporter.observe_decode("kitchen", "final", 0.2)
        _, one = histograms()
        source.config = dataclasses.replace(config, streams=(StreamConfig(name="porch", device="null"),))  # a reload
        _, reloaded = histograms()
    finally:
        exp.stop(time.monotonic() + 1)
    latency = quiet["voxnode_final_latency_seconds"]
    assert set(latency) == {(("stream", "kitchen"),), (("stream", "hall"),)}
    decode = quiet["voxnode_decode_seconds"]
    kinds = {"final", "speculative", "partial", "wake"}
    expected = {(("kind", k), ("stream", s)) for s in ("kitchen", "hall") for k in kinds}
    expected |= {(("kind", k), ("stream", OBSERVED_AS)) for k in ("final", "partial")}
    assert set(decode) == expected
    for series in [*latency.values(), *decode.values()]:
        assert all(v == 0 for _, _, v in series)  # every bucket, the count and the sum
        assert any(le == "+Inf" for _, le, _ in series)
        assert {n.rsplit("_", 1)[1] for n, _, _ in series} == {"bucket", "count", "sum"}
    if PROMTOOL:
        lint = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True)
        assert lint.returncode == 0 and not lint.stdout.strip(), lint.stdout + lint.stderr
    counts = {k: next(v for n, _, v in s if n.endswith("_count")) for k, s in one["voxnode_decode_seconds"].items()}
    assert counts[(("kind", "final"), ("stream", "kitchen"))] == 1
    assert sum(counts.values()) == 1
    # After a reload the new stream's series are there from the start; the old one's observations stay.
    streams = {dict(k)["stream"] for k in reloaded["voxnode_decode_seconds"]}
    assert {"porch", "kitchen", OBSERVED_AS} <= streams and "hall" not in streams
    assert {dict(k)["stream"] for k in reloaded["voxnode_final_latency_seconds"]} == {"porch"}
