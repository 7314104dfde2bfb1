"""The monitoring files: alert rules (promtool check and unit tests), the example Prometheus config,
the Grafana dashboard (up to date with its generator, well-formed, naming only served metrics)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tests.fleet.conftest import MONITORING, PROMTOOL, needs_prometheus

pytest.importorskip("prometheus_client")
from voxnode.health.metrics import METRICS  # noqa: E402

PROM = MONITORING / "prometheus"
DASHBOARD = MONITORING / "grafana" / "voxnode-fleet.json"
# What the queries may name besides voxnode's metrics: prometheus-client's process collector,
# Prometheus' own series, node_exporter's textfile collector.
PROCESS = {"process_resident_memory_bytes", "process_cpu_seconds_total", "process_start_time_seconds"}
OTHER = {"up", "ALERTS", "node_textfile_mtime_seconds"}
FUNCTIONS = {"count", "vector", "rate", "increase", "sum", "max", "histogram_quantile", "time", "deriv"}


@needs_prometheus
def test_alert_rules_pass_promtool_check_and_their_unit_tests():
    check = subprocess.run([PROMTOOL, "check", "rules", "voxnode-alerts.yml"], cwd=PROM, capture_output=True, text=True)
    assert check.returncode == 0 and "SUCCESS: 17 rules found" in check.stdout, check.stdout + check.stderr
    tests = subprocess.run(
        [PROMTOOL, "test", "rules", "voxnode-alerts.test.yml"], cwd=PROM, capture_output=True, text=True
    )
    assert tests.returncode == 0 and "SUCCESS" in tests.stdout, tests.stdout + tests.stderr


@needs_prometheus
def test_example_prometheus_config_is_valid():
    r = subprocess.run([PROMTOOL, "check", "config", "prometheus.yml"], cwd=PROM, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def metric_names(expr: str) -> set[str]:
    """Series names in a PromQL expression: identifiers not followed by `(` that are no label,
    keyword or function (good enough for the queries written here)."""
    expr = re.sub(r'"[^"]*"', '""', expr)  # strings: label values, templates
    expr = re.sub(r"\{[^}]*\}", "{}", expr)  # label matchers
    expr = re.sub(r"\[[^\]]*\]", "", expr)  # ranges: [5m], [$__rate_interval]
    expr = re.sub(r"\b(by|on|without|ignoring|group_left|group_right)\s*\([^()]*\)", "", expr)  # label lists
    names = set(re.findall(r"\b([a-zA-Z_][a-zA-Z0-9_]*)\b(?!\s*\()", expr))
    return {n for n in names if n not in FUNCTIONS | {"or", "and"}}


def base_name(name: str) -> str:
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix) and name.removesuffix(suffix) in METRICS:
            return name.removesuffix(suffix)
    return name


def dashboard_exprs() -> list[str]:
    dash = json.loads(DASHBOARD.read_text())
    return [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]


def alert_exprs() -> list[str]:
    # The expressions of the YAML rules (block scalars and one-liners), without a YAML parser.
    text = (PROM / "voxnode-alerts.yml").read_text()
    out = []
    for m in re.finditer(r"^ +expr: (>\n((?: {10}.*\n)+)|(.*)\n)", text, re.M):
        out.append(" ".join(m.group(2).split()) if m.group(2) else m.group(3))
    return out


def test_every_metric_in_the_dashboard_and_the_alerts_is_a_served_one():
    exprs = dashboard_exprs() + alert_exprs()
    assert len(alert_exprs()) == 17 and len(dashboard_exprs()) > 30
    used = {base_name(n) for e in exprs for n in metric_names(e)}
    unknown = used - set(METRICS) - PROCESS - OTHER
    assert not unknown, unknown
    # and the checker finds them: the latency histogram, a counter, a process metric
    assert {"voxnode_final_latency_seconds", "voxnode_stream_dropped_frames_total", "process_cpu_seconds_total"} <= used


def test_dashboard_is_generated_and_well_formed():
    r = subprocess.run([sys.executable, "-m", "scripts.grafana_dashboard", "--check"], cwd=MONITORING.parent)
    assert r.returncode == 0, "voxnode-fleet.json is out of date: run python -m scripts.grafana_dashboard"
    dash = json.loads(DASHBOARD.read_text())
    assert dash["uid"] == "voxnode-fleet" and dash["schemaVersion"] >= 36
    variables = {v["name"] for v in dash["templating"]["list"]}
    assert variables == {"datasource", "job", "node", "stream"}
    panels = dash["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    rows = [p["title"] for p in panels if p["type"] == "row"]
    assert rows[0] == "Fleet overview" and rows[1].startswith("Node detail")
    cells: set[tuple[int, int]] = set()
    for p in panels:
        g = p["gridPos"]
        assert g["x"] >= 0 and g["x"] + g["w"] <= 24, p["title"]
        mine = {(g["y"] + dy, g["x"] + dx) for dy in range(g["h"]) for dx in range(g["w"])}
        assert not (mine & cells), f"{p['title']} overlaps another panel"
        cells |= mine
        if p["type"] != "row":
            assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, p["title"]
            for t in p["targets"]:
                assert t["datasource"]["uid"] == "${datasource}"
                used = set(re.findall(r"\$(\w+)", t["expr"])) - {"__rate_interval"}
                assert used <= variables, (p["title"], used)
