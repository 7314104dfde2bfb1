"""Writes monitoring/grafana/voxnode-fleet.json, the Grafana dashboard for a voxnode fleet.

    .venv/bin/python -m scripts.grafana_dashboard            # rewrite the file
    .venv/bin/python -m scripts.grafana_dashboard --check    # exit 1 if the file differs (a test runs this)

Generated rather than hand-edited so that every query is readable here and the panel grid stays
consistent. Two rows: the fleet overview (every node side by side) and the drill-down for the
nodes picked in `$node`. Metric names: docs/fleet.md; a test checks every name used here against
what the daemon serves.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "monitoring" / "grafana" / "voxnode-fleet.json"
DS = {"type": "prometheus", "uid": "${datasource}"}
NODE = 'job=~"$job", node=~"$node"'
STREAM = f'{NODE}, stream=~"$stream"'
# process_* carry no node label: take it from voxnode_build_info of the same target.
BY_NODE = f"* on (instance, job) group_left (node) voxnode_build_info{{{NODE}}}"
GRAPH_H = 8  # grid rows of every time series panel (the stat tiles: 4)


def quantile(q: float, by: str, metric: str, selector: str, window: str = "$__rate_interval") -> str:
    """A percentile from the summed histogram buckets, e.g. over every node of the fleet."""
    return f"histogram_quantile({q}, sum by ({by}le) (rate({metric}_bucket{{{selector}}}[{window}])))"


class Grid:
    def __init__(self) -> None:
        self.panels: list[dict] = []
        self.y = 0
        self.x = 0
        self.row_h = 0

    def row(self, title: str) -> None:
        self._newline()
        self.panels.append(
            {
                "type": "row",
                "title": title,
                "collapsed": False,
                "gridPos": {"h": 1, "w": 24, "x": 0, "y": self.y},
                "panels": [],
            }
        )
        self.y += 1

    def add(self, panel: dict, w: int, h: int) -> None:
        if self.x + w > 24:
            self._newline()
        panel["gridPos"] = {"h": h, "w": w, "x": self.x, "y": self.y}
        self.x += w
        self.row_h = max(self.row_h, h)
        self.panels.append(panel)

    def graph(self, w: int, title: str, targets: list[dict], unit: str = "short", description: str = "") -> None:
        """A time series panel, GRAPH_H high."""
        self.add(timeseries(title, targets, unit, description), w, GRAPH_H)

    def _newline(self) -> None:
        self.y += self.row_h
        self.x = 0
        self.row_h = 0


def target(expr: str, legend: str = "", ref: str = "A", **extra) -> dict:
    t = {"datasource": DS, "expr": expr, "legendFormat": legend or "__auto", "refId": ref}
    t.update(extra)
    return t


def timeseries(title: str, targets: list[dict], unit: str = "short", description: str = "") -> dict:
    """Its targets get the refIds A, B, C... in order."""
    return {
        "type": "timeseries",
        "title": title,
        "description": description,
        "datasource": DS,
        "targets": [{**t, "refId": chr(ord("A") + i)} for i, t in enumerate(targets)],
        "fieldConfig": {"defaults": {"unit": unit, "custom": {"lineWidth": 1, "fillOpacity": 5}}, "overrides": []},
        "options": {"legend": {"displayMode": "table", "placement": "right", "calcs": ["lastNotNull", "max"]}},
    }


def stat(title: str, expr: str, unit: str = "short", thresholds: list[tuple[float | None, str]] | None = None) -> dict:
    steps = [{"color": c, "value": v} for v, c in (thresholds or [(None, "green")])]
    return {
        "type": "stat",
        "title": title,
        "datasource": DS,
        "targets": [target(expr, instant=True)],
        "fieldConfig": {
            "defaults": {"unit": unit, "thresholds": {"mode": "absolute", "steps": steps}},
            "overrides": [],
        },
        "options": {"colorMode": "background", "graphMode": "none", "reduceOptions": {"calcs": ["lastNotNull"]}},
    }


def nodes_table() -> dict:
    queries = [
        ("version", f"voxnode_build_info{{{NODE}}}", "version"),
        ("uptime", f"time() - voxnode_start_time_seconds{{{NODE}}}", None),
        ("rss", f"process_resident_memory_bytes {BY_NODE}", None),
        ("cpu", f"rate(process_cpu_seconds_total[5m]) {BY_NODE}", None),
        ("soc", f"voxnode_soc_temperature_celsius{{{NODE}}}", None),
        ("throttled", f"max by (node) (voxnode_soc_throttled{{{NODE}}})", None),
        (
            "p95",
            f"histogram_quantile(0.95, sum by (node, le) (rate(voxnode_final_latency_seconds_bucket{{{NODE}}}[1h])))",
            None,
        ),
        ("dropped", f"sum by (node) (increase(voxnode_stream_dropped_frames_total{{{NODE}}}[1h]))", None),
        ("backlog", f"voxnode_mqtt_backlog_messages{{{NODE}}}", None),
        ("board", f"voxnode_node_info{{{NODE}}}", "board"),
    ]
    targets = [
        target(expr, ref=chr(ord("A") + i), instant=True, format="table") for i, (_, expr, _label) in enumerate(queries)
    ]
    names = {f"Value #{chr(ord('A') + i)}": name for i, (name, _, _label) in enumerate(queries)}
    return {
        "type": "table",
        "title": "Nodes",
        "description": "One row per node: what it runs and how it is doing (p95, dropped frames: last hour).",
        "datasource": DS,
        "targets": targets,
        "transformations": [
            {"id": "merge", "options": {}},
            {
                "id": "organize",
                "options": {
                    "excludeByName": {"Time": True, "__name__": True, "job": True, "Value #A": True, "Value #J": True},
                    "renameByName": names,
                    "indexByName": {"node": 0, "version": 1, "board": 2},
                },
            },
        ],
        "fieldConfig": {
            "defaults": {},
            "overrides": [
                {"matcher": {"id": "byName", "options": "uptime"}, "properties": [{"id": "unit", "value": "s"}]},
                {"matcher": {"id": "byName", "options": "rss"}, "properties": [{"id": "unit", "value": "bytes"}]},
                {"matcher": {"id": "byName", "options": "cpu"}, "properties": [{"id": "unit", "value": "percentunit"}]},
                {"matcher": {"id": "byName", "options": "soc"}, "properties": [{"id": "unit", "value": "celsius"}]},
                {"matcher": {"id": "byName", "options": "p95"}, "properties": [{"id": "unit", "value": "s"}]},
            ],
        },
    }


def variables() -> list[dict]:
    def query(name: str, q: str, label: str) -> dict:
        return {
            "type": "query",
            "name": name,
            "label": label,
            "datasource": DS,
            "query": {"query": q, "refId": name},
            "definition": q,
            "refresh": 2,
            "multi": True,
            "includeAll": True,
            "current": {"text": "All", "value": "$__all"},
            "sort": 1,
        }

    job = {
        "type": "custom",
        "name": "job",
        "label": "Scrape job",
        "query": "voxnode",
        "current": {"text": "voxnode", "value": "voxnode"},
    }
    return [
        {"type": "datasource", "name": "datasource", "label": "Prometheus", "query": "prometheus"},
        job,
        query("node", 'label_values(voxnode_build_info{job=~"$job"}, node)', "Node"),
        query("stream", 'label_values(voxnode_stream_frames_total{job=~"$job", node=~"$node"}, stream)', "Stream"),
    ]


def dashboard() -> dict:
    g = Grid()
    g.row("Fleet overview")
    g.add(stat("Nodes up", 'count(up{job=~"$job"} == 1) or vector(0)'), 4, 4)
    g.add(
        stat("Nodes down", 'count(up{job=~"$job"} == 0) or vector(0)', thresholds=[(None, "green"), (1, "red")]), 4, 4
    )
    g.add(
        stat(
            "Alerts firing",
            'count(ALERTS{alertname=~"Voxnode.*", alertstate="firing"}) or vector(0)',
            thresholds=[(None, "green"), (1, "red")],
        ),
        4,
        4,
    )
    g.add(
        stat(
            "Fleet final latency p95",
            f"histogram_quantile(0.95, sum by (le) (rate(voxnode_final_latency_seconds_bucket{{{NODE}}}[1h])))",
            unit="s",
            thresholds=[(None, "green"), (1, "orange"), (2, "red")],
        ),
        4,
        4,
    )
    g.add(stat("Finals in the last hour", f"sum(increase(voxnode_stream_finals_total{{{NODE}}}[1h]))"), 4, 4)
    g.add(
        stat(
            "Finals waiting for the broker",
            f"sum(voxnode_mqtt_backlog_messages{{{NODE}}}) or vector(0)",
            thresholds=[(None, "green"), (100, "orange")],
        ),
        4,
        4,
    )
    g.add(nodes_table(), 24, 8)
    rate = "$__rate_interval"
    g.graph(
        12,
        "Final latency p95 by node",
        [target(quantile(0.95, "node, ", "voxnode_final_latency_seconds", NODE), "{{node}}")],
        unit="s",
    )
    g.graph(12, "Resident memory by node", [target(f"process_resident_memory_bytes {BY_NODE}", "{{node}}")], "bytes")
    g.graph(
        12, "CPU by node (1 = one core)", [target(f"rate(process_cpu_seconds_total[{rate}]) {BY_NODE}", "{{node}}")]
    )
    g.graph(12, "SoC temperature", [target(f"voxnode_soc_temperature_celsius{{{NODE}}}", "{{node}}")], "celsius")
    g.graph(12, "MQTT backlog", [target(f"voxnode_mqtt_backlog_messages{{{NODE}}}", "{{node}}")])
    g.graph(
        12,
        "Dropped frames per second",
        [target(f"rate(voxnode_stream_dropped_frames_total{{{NODE}}}[{rate}])", "{{node}}/{{stream}}")],
    )

    g.row("Node detail ($node, $stream)")
    g.graph(
        8,
        "Capture state",
        [target(f"voxnode_stream_state{{{STREAM}}} == 1", "{{node}}/{{stream}} {{state}}")],
        description="1 for the capture's current state: running is fine; backoff: the device cannot be opened.",
    )
    g.graph(
        8,
        "Seconds since the last audio frame",
        [target(f"voxnode_stream_audio_age_seconds{{{STREAM}}}", "{{node}}/{{stream}}")],
        "s",
    )
    g.graph(8, "Noise floor", [target(f"voxnode_stream_noise_floor_dbfs{{{STREAM}}}", "{{node}}/{{stream}}")], "dB")
    snr = "How far above the room's noise the talkers reach the microphone: under ~10 dB Whisper loses many words."
    g.graph(
        8, "Speech over noise", [target(f"voxnode_stream_speech_snr_db{{{STREAM}}}", "{{node}}/{{stream}}")], "dB", snr
    )
    low = f'sum by (node, stream) (increase(voxnode_final_speech_snr_db_bucket{{{STREAM},le="5.0"}}[1h]))'
    low += f" / sum by (node, stream) (increase(voxnode_final_speech_snr_db_count{{{STREAM}}}[1h]))"
    why = "Share of the last hour's finals heard under 5 dB over the room's noise: nine words in ten lost there."
    g.graph(8, "Finals heard under 5 dB", [target(low, "{{node}}/{{stream}}")], "percentunit", why)
    mic = [
        f"voxnode_stream_digital_silence_seconds{{{STREAM}}}",
        f"rate(voxnode_stream_clipped_frames_total{{{STREAM}}}[{rate}])",
    ]
    g.graph(8, "Microphone: seconds of zeros / clipped frames per s", [target(e, "{{node}}/{{stream}}") for e in mic])
    g.add(
        {
            "type": "heatmap",
            "title": "Final latency",
            "datasource": DS,
            "targets": [
                target(
                    f"sum by (le) (increase(voxnode_final_latency_seconds_bucket{{{STREAM}}}[{rate}]))",
                    "{{le}}",
                    format="heatmap",
                )
            ],
            "options": {"calculate": False, "yAxis": {"unit": "s"}, "cellGap": 1},
        },
        12,
        8,
    )
    g.graph(
        12,
        "Final latency p50 / p95",
        [
            target(quantile(0.5, "node, stream, ", "voxnode_final_latency_seconds", STREAM), "p50 {{node}}/{{stream}}"),
            target(
                quantile(0.95, "node, stream, ", "voxnode_final_latency_seconds", STREAM), "p95 {{node}}/{{stream}}"
            ),
        ],
        unit="s",
    )
    g.graph(
        8,
        "Decode time p95 by kind",
        [target(quantile(0.95, "node, kind, ", "voxnode_decode_seconds", STREAM), "{{node}} {{kind}}")],
        unit="s",
    )
    g.graph(
        8,
        "Engine busy (1 = every decode worker busy)",
        [
            target(
                f"rate(voxnode_decode_busy_seconds_total{{{NODE}}}[{rate}]) / voxnode_decode_workers{{{NODE}}}",
                "{{node}}",
            )
        ],
        unit="percentunit",
    )
    g.graph(
        8,
        "Decode queue",
        [
            target(f"voxnode_decode_queue_jobs{{{NODE}}}", "{{node}} jobs"),
            target(f"voxnode_decode_pending_finals{{{NODE}}}", "{{node}} finals"),
        ],
    )
    g.graph(
        12,
        "Transcripts per minute",
        [
            target(f"60 * rate(voxnode_stream_finals_total{{{STREAM}}}[{rate}])", "finals {{node}}/{{stream}}"),
            target(f"60 * rate(voxnode_stream_suppressed_total{{{STREAM}}}[{rate}])", "suppressed {{node}}/{{stream}}"),
            target(f"60 * rate(voxnode_stream_finals_lost_total{{{STREAM}}}[{rate}])", "lost {{node}}/{{stream}}"),
        ],
    )
    g.graph(
        12,
        "Memory",
        [
            target(f"process_resident_memory_bytes {BY_NODE}", "RSS {{node}}"),
            target(f"voxnode_heap_in_use_bytes{{{NODE}}}", "heap in use {{node}}"),
            target(f"voxnode_heap_free_bytes{{{NODE}}}", "heap free {{node}}"),
            target(f"voxnode_rss_growth_bytes{{{NODE}}}", "leak watch growth {{node}}"),
        ],
        unit="bytes",
    )
    g.graph(
        8,
        "Throttling (Raspberry Pi)",
        [target(f"voxnode_soc_throttled{{{NODE}}}", "{{node}} {{reason}}")],
        description="1 while the firmware reports the condition.",
    )
    g.graph(
        8,
        "MQTT",
        [
            target(f"voxnode_mqtt_connected{{{NODE}}}", "{{node}} connected"),
            target(f"60 * rate(voxnode_mqtt_published_total{{{NODE}}}[{rate}])", "{{node}} published/min"),
            target(f"increase(voxnode_mqtt_rejected_total{{{NODE}}}[{rate}])", "{{node}} rejected"),
        ],
    )
    g.graph(8, "Spool size", [target(f"voxnode_mqtt_spool_bytes{{{NODE}}}", "{{node}}")], "bytes")
    return {
        "title": "voxnode fleet",
        "uid": "voxnode-fleet",
        "description": "Fleet overview and per-node drill-down for voxnode speech-to-text nodes (docs/fleet.md).",
        "tags": ["voxnode"],
        "editable": True,
        "schemaVersion": 39,
        "version": 1,
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "30s",
        "timezone": "",
        "templating": {"list": variables()},
        "annotations": {"list": []},
        "panels": [dict(p, id=i + 1) for i, p in enumerate(g.panels)],
    }


def render() -> str:
    return json.dumps(dashboard(), indent=2) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--check", action="store_true", help="exit 1 if the committed file is not what this writes")
    args = p.parse_args()
    text = render()
    if args.check:
        current = OUT.read_text() if OUT.exists() else ""
        if current != text:
            print(f"{OUT} is out of date: run {sys.argv[0]}", file=sys.stderr)
            return 1
        return 0
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
