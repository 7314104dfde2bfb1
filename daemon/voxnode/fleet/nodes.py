"""One node of the fleet as `voxnode fleet` shows it: its retained status and health, summed up in
one row, with what is wrong spelled out (`problems`).

Pure functions over the payloads (docs/schemas/status.json, health.json); the watcher (watch.py)
collects them from the broker.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime

# A health report is due every interval_s (it says so; 30 s before it did). Missing 2.5 of them,
# plus 5 s for a slow link, means the node stopped reporting although the broker still says online.
STALE_FACTOR = 2.5
STALE_SLACK_S = 5.0
DEFAULT_INTERVAL_S = 30.0
# A model still not loaded this long after start is stuck (Pi 4: about 2 s to load; docs/asr.md).
MODEL_LOAD_GRACE_S = 60.0


@dataclass(frozen=True)
class Limits:
    """What counts as a problem; the command line can change each."""

    stall_s: float = 10.0  # a running capture with no audio for this long (service.capture_stall_s is 5 s)
    latency_p95_s: float = 2.0  # final latency p95 (x86 bench: 0.5-1.1 s; a Pi 4 is 2-3x slower)
    backlog: int = 100  # finals waiting for the broker
    hot_c: float = 80.0  # Raspberry Pi firmware starts soft throttling at 80 C


@dataclass
class NodeState:
    """The latest retained messages of one node (and the health before it, for growth)."""

    node: str
    status: bytes | None = None
    health: dict | None = None
    previous_health: dict | None = None

    def set_health(self, payload: bytes) -> bool:
        try:
            data = json.loads(payload)
        except ValueError:
            return False
        if not isinstance(data, dict):
            return False
        if self.health is not None and self.health.get("time") != data.get("time"):
            self.previous_health = self.health
        self.health = data
        return True


@dataclass
class Row:
    node: str
    status: str  # online | offline | unknown
    problems: list[str] = field(default_factory=list)
    values: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"node": self.node, "status": self.status, **self.values, "problems": self.problems}


def _status_fields(payload: bytes | None) -> tuple[str, dict]:
    """(state, the other fields) of a status message: JSON, or an older release's plain text."""
    if payload is None:
        return "unknown", {}
    text = payload.decode("utf-8", errors="replace").strip()
    if text in ("online", "offline"):
        return text, {}
    try:
        data = json.loads(text)
    except ValueError:
        return "unknown", {}
    if not isinstance(data, dict):
        return "unknown", {}
    state = data.get("state")
    return (state if state in ("online", "offline") else "unknown"), data


def _age(iso: object, now: float) -> float | None:
    if not isinstance(iso, str):
        return None
    try:
        t = datetime.fromisoformat(iso).timestamp()
    except ValueError:
        return None
    return round(max(0.0, now - t), 1)  # a node clock ahead of ours reads as just now


def _num(value: object) -> float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def summarize(state: NodeState, now: float, limits: Limits) -> Row:
    """The row of one node at wall-clock time `now`."""
    status, info = _status_fields(state.status)
    row = Row(state.node, status)
    h = state.health or {}
    raw_streams = h.get("streams")
    streams: dict[str, dict] = raw_streams if isinstance(raw_streams, dict) else {}
    proc, thermal, mqtt = h.get("process") or {}, h.get("thermal") or {}, h.get("mqtt") or {}
    throttled = thermal.get("throttled") if isinstance(thermal.get("throttled"), dict) else None
    health_age = _age(h.get("time"), now)
    final_ages = [a for a in (_age(st.get("last_final"), now) for st in streams.values()) if a is not None]
    p95s = [v for v in (_num(st.get("latency_p95_ms")) for st in streams.values()) if v is not None]
    floors = [v for v in (_num(st.get("noise_floor_dbfs")) for st in streams.values()) if v is not None]
    snrs = [v for v in (_num(st.get("speech_snr_db")) for st in streams.values()) if v is not None]
    row.values = {
        "version": h.get("version") or info.get("version"),
        "uptime_s": _num(h.get("uptime_s")),
        "health_age_s": health_age,
        "streams": {name: _stream(st) for name, st in streams.items()},
        "cpu_percent": _num(proc.get("cpu_percent")),
        "rss_bytes": _num(proc.get("rss_bytes")),
        "soc_temp_c": _num(thermal.get("soc_temp_c")),
        "throttled": None if throttled is None else bool(throttled.get("throttled")),
        "under_voltage": None if throttled is None else bool(throttled.get("under_voltage")),
        "noise_floor_dbfs": min(floors) if floors else None,
        "speech_snr_db": min(snrs) if snrs else None,  # the stream whose talkers reach it least above its room
        "last_final_age_s": min(final_ages) if final_ages else None,
        "latency_p95_s": round(max(p95s) / 1000.0, 3) if p95s else None,
        "dropped_frames": sum(int(st.get("dropped_frames") or 0) for st in streams.values()),
        "backlog": _num(mqtt.get("backlog")),
        "clock_synchronized": (h.get("clock") or {}).get("synchronized"),
        "model": info.get("model") or (h.get("model") or {}).get("name"),
        **{k: info.get(k) for k in ("board", "os", "kernel", "arch", "model_sha256", "config_sha256")},
    }
    row.problems = _problems(state, row, h, streams, limits)
    return row


def _stream(st: dict) -> dict:
    return {
        "state": st.get("state"),
        "muted": st.get("muted"),
        "audio_age_s": _num(st.get("audio_age_s")),
        "dropped_frames": st.get("dropped_frames"),
        "latency_p95_ms": _num(st.get("latency_p95_ms")),
        "noise_floor_dbfs": _num(st.get("noise_floor_dbfs")),
        "speech_snr_db": _num(st.get("speech_snr_db")),
        "last_final": st.get("last_final"),
    }


def _problems(state: NodeState, row: Row, h: dict, streams: dict, limits: Limits) -> list[str]:
    v = row.values
    if row.status == "offline":
        return ["offline"]
    if not h:
        return ["no health report"]
    out = []
    if row.status == "unknown":
        out.append("no status message")
    interval = _num(h.get("interval_s")) or DEFAULT_INTERVAL_S
    age = v["health_age_s"]
    if age is not None and age > STALE_FACTOR * interval + STALE_SLACK_S:
        # A node whose clock no NTP client has set yet (a Pi boots with its last shutdown time) dates its
        # reports hours back: say that, not only that they look old.
        why = ", by its clock, which is not synchronised" if v["clock_synchronized"] is False else ""
        out.append(f"health {age:.0f} s old{why} (due every {interval:.0f} s)")
    for name, st in streams.items():
        s = st.get("state")
        audio_age = _num(st.get("audio_age_s"))
        if s in ("backoff", "stopped"):
            why = f": {st['last_error']}" if st.get("last_error") else ""
            out.append(f"stream {name} {s}{why}"[:160])
        elif s == "running" and audio_age is not None and audio_age > limits.stall_s:
            out.append(f"stream {name} stalled: no audio for {audio_age:.0f} s")
        elif st.get("input") == "silent":
            zeros_s = _num(st.get("silent_s")) or 0
            out.append(f"stream {name} silent: digital zeros for {zeros_s:.0f} s (capture muted?)")
        elif st.get("input") == "clipping":
            out.append(f"stream {name} clips: capture gain too high")
    if v["under_voltage"]:
        out.append("under-voltage")
    if v["throttled"]:
        out.append("throttled")
    if v["soc_temp_c"] is not None and v["soc_temp_c"] >= limits.hot_c:
        out.append(f"SoC at {v['soc_temp_c']:.0f} C")
    if ((h.get("memory") or {}).get("leak") or {}).get("suspected"):
        out.append("memory leak suspected")
    model = h.get("model") or {}
    if model.get("loaded") is False and (v["uptime_s"] or 0) > MODEL_LOAD_GRACE_S:
        out.append("model not loaded")
    if v["latency_p95_s"] is not None and v["latency_p95_s"] > limits.latency_p95_s:
        out.append(f"latency p95 {v['latency_p95_s']:.2f} s > {limits.latency_p95_s:g} s")
    mqtt = h.get("mqtt") or {}
    if v["backlog"] is not None and v["backlog"] > limits.backlog:
        out.append(f"MQTT backlog {v['backlog']:.0f}")
    if mqtt.get("spool_writable") is False:
        out.append("spool cannot store finals")
    prev = state.previous_health
    if prev is not None:
        before = sum(int(st.get("dropped_frames") or 0) for st in (prev.get("streams") or {}).values())
        if v["dropped_frames"] > before:
            out.append(f"dropping frames (+{v['dropped_frames'] - before})")
    return out
