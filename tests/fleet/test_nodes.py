"""The fleet row of one node and its problems, from status and health payloads; the table; what a
node says it runs (board, OS, checksums); the histograms behind the latency metrics."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time

from voxnode.events import iso8601
from voxnode.fleet.nodes import Limits, NodeState, summarize
from voxnode.fleet.table import duration, render
from voxnode.health.histograms import Histogram
from voxnode.health.nodeinfo import board_model, config_sha256, model_sha256, node_info, os_name

NOW = 1_800_000_000.0


def health(**over) -> dict:
    h = {
        "node": "kitchen",
        "version": "0.1.0",
        "time": iso8601(NOW - 2),
        "uptime_s": 3600.0,
        "interval_s": 30.0,
        "process": {"cpu_percent": 7.5, "rss_bytes": 150_000_000, "threads": 9},
        "memory": {"leak": {"suspected": False}},
        "model": {"name": "whisper-tiny.en", "loaded": True},
        "streams": {
            "kitchen": {"state": "running", "muted": False, "dropped_frames": 0, "audio_age_s": 0.0},
            "hall": {"state": "running", "muted": False, "dropped_frames": 0, "audio_age_s": 0.1},
        },
        "thermal": {
            "soc_temp_c": 55.0,
            "zones_c": {},
            "throttled": {"raw": "0x0", "under_voltage": False, "throttled": False},
        },
        "mqtt": {"connected": True, "backlog": 0},
    }
    for key, value in over.items():
        h[key] = value
    return h


def status(state: str = "online") -> bytes:
    return json.dumps({"state": state, "node": "kitchen", "board": "Raspberry Pi 5 Model B Rev 1.0"}).encode()


DEFAULTS = Limits()


def row(h: dict | None, st: bytes | None = None, limits: Limits = DEFAULTS):
    return summarize(NodeState("kitchen", status() if st is None else st, h), NOW, limits)


def test_a_healthy_node_has_no_problem_and_its_figures():
    h = health()
    h["streams"]["kitchen"].update(noise_floor_dbfs=-58.2, latency_p95_ms=640.0, last_final=iso8601(NOW - 42))
    h["streams"]["hall"].update(noise_floor_dbfs=-66.0, latency_p95_ms=710.0, dropped_frames=4)
    h["streams"]["kitchen"].update(speech_snr_db=7.4)
    h["streams"]["hall"].update(speech_snr_db=24.0)
    r = row(h)
    assert r.problems == [] and r.status == "online"
    v = r.values
    assert v["noise_floor_dbfs"] == -66.0 and v["latency_p95_s"] == 0.71 and v["last_final_age_s"] == 42.0
    assert v["dropped_frames"] == 4 and v["board"] == "Raspberry Pi 5 Model B Rev 1.0" and v["health_age_s"] == 2.0
    assert v["throttled"] is False and v["under_voltage"] is False
    assert v["speech_snr_db"] == 7.4  # the stream whose talkers reach it least above its room
    assert "  7dB  " in render([r], "h")


def test_each_problem_is_named():
    h = health(uptime_s=600.0)
    h["streams"]["kitchen"].update(state="backoff", last_error="[Errno 19] No such device")
    h["streams"]["hall"].update(audio_age_s=25.0, latency_p95_ms=2600.0)
    h["thermal"] = {
        "soc_temp_c": 82.4,
        "zones_c": {},
        "throttled": {"raw": "0x50005", "under_voltage": True, "throttled": True},
    }
    h["memory"]["leak"]["suspected"] = True
    h["model"] = {"name": None, "loaded": False}
    h["mqtt"] = {"connected": True, "backlog": 250, "spool_writable": False}
    problems = row(h).problems
    assert problems == [
        "stream kitchen backoff: [Errno 19] No such device",
        "stream hall stalled: no audio for 25 s",
        "under-voltage",
        "throttled",
        "SoC at 82 C",
        "memory leak suspected",
        "model not loaded",
        "latency p95 2.60 s > 2 s",
        "MQTT backlog 250",
        "spool cannot store finals",
    ]
    # the limits come from the command line
    assert row(h, limits=Limits(stall_s=30, latency_p95_s=3, backlog=1000, hot_c=90)).problems == [
        "stream kitchen backoff: [Errno 19] No such device",
        "under-voltage",
        "throttled",
        "memory leak suspected",
        "model not loaded",
        "spool cannot store finals",
    ]


def test_offline_stale_missing_and_dropping():
    assert row(health(), status("offline")).problems == ["offline"]
    assert row(None).problems == ["no health report"]
    assert row(health(), b"not json").problems == ["no status message"]
    assert row(health(), b"online").problems == []  # an older release's plain-text status
    assert row(health(time=iso8601(NOW - 150), interval_s=60.0)).problems == []  # 150 s < 2.5 x 60 s + 5 s
    assert row(health(time=iso8601(NOW - 200))).problems == ["health 200 s old (due every 30 s)"]
    # A node whose clock no NTP client has set (a Pi boots with its last shutdown time) says so.
    unset = {"synchronized": False, "steps": 0, "last_step_s": None}
    assert row(health(time=iso8601(NOW - 7200), clock=unset)).problems == [
        "health 7200 s old, by its clock, which is not synchronised (due every 30 s)"
    ]
    assert row(health(clock=unset)).problems == []  # unsynchronised alone is no problem (a node kept offline)
    assert row(health(clock=unset)).values["clock_synchronized"] is False
    # What the microphone's samples say (audio/input_check.py).
    muted = health()
    muted["streams"]["kitchen"].update(input="silent", silent_s=184.2)
    muted["streams"]["hall"].update(input="clipping", clipped_frames=40)
    assert row(muted).problems == [
        "stream kitchen silent: digital zeros for 184 s (capture muted?)",
        "stream hall clips: capture gain too high",
    ]
    assert row(health(uptime_s=20.0, model={"loaded": False})).problems == []  # still loading
    state = NodeState("kitchen", status())
    assert state.set_health(json.dumps(health()).encode())
    later = health(time=iso8601(NOW - 1))
    later["streams"]["hall"]["dropped_frames"] = 120
    assert state.set_health(json.dumps(later).encode()) and not state.set_health(b"[1]")
    assert summarize(state, NOW, Limits()).problems == ["dropping frames (+120)"]


def test_table_marks_the_nodes_with_problems():
    ok = row(health())
    bad = summarize(NodeState("garage", status("offline"), health()), NOW, Limits())
    text = render([bad, ok], "header")
    lines = text.splitlines()
    assert lines[0] == "header" and lines[2].startswith("  NODE")
    assert lines[3].split()[:3] == ["!", "garage", "offline"] and lines[4].startswith("  kitchen ")
    assert lines[4].split()[:9] == ["kitchen", "online", "0.1.0", "60m", "2/2", "8%", "143M", "55C", "no"]
    assert text.endswith("1 of 2 node(s) with problems:\n  garage: offline\n")
    assert render([], "h").endswith("no voxnode node found\n")
    assert [duration(s) for s in (None, 5, 119, 120, 7199, 7200, 172800)] == [
        "-",
        "5s",
        "119s",
        "2m",
        "119m",
        "2h",
        "2d",
    ]


def test_node_info_from_the_board_the_os_and_the_files(tmp_path):
    (tmp_path / "proc/device-tree").mkdir(parents=True)
    (tmp_path / "proc/device-tree/model").write_bytes(b"Raspberry Pi 4 Model B Rev 1.5\x00")
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/os-release").write_text('NAME="Debian"\nPRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n')
    assert board_model(tmp_path) == "Raspberry Pi 4 Model B Rev 1.5"
    assert os_name(tmp_path) == "Debian GNU/Linux 12 (bookworm)"
    (tmp_path / "proc/device-tree/model").unlink()
    (tmp_path / "sys/class/dmi/id").mkdir(parents=True)
    (tmp_path / "sys/class/dmi/id/product_name").write_text("ThinkCentre M720q\n")
    assert board_model(tmp_path) == "ThinkCentre M720q"
    assert board_model(tmp_path / "none") is None and os_name(tmp_path / "none") is None


def test_checksums_match_what_an_operator_can_compute(tmp_path):
    from voxnode.asr import default_model_dir
    from voxnode.config import load_config
    from voxnode.config.asr import AsrConfig

    cfg = tmp_path / "c.toml"
    cfg.write_text('[mqtt]\npassword = "s3cret"\nusername = "u"\n\n[health]\ninterval_s = 10.0\n')
    printed = subprocess.run(
        [sys.executable, "-m", "voxnode", "check-config", "--config", str(cfg)], capture_output=True, check=True
    ).stdout
    config = load_config(str(cfg))
    assert config_sha256(config) == hashlib.sha256(printed).hexdigest()  # `voxnode check-config | sha256sum`
    assert b"s3cret" not in printed  # secrets are masked, so the checksum does not reveal them
    manifest = default_model_dir() / "manifest.json"
    assert model_sha256(AsrConfig()) == hashlib.sha256(manifest.read_bytes()).hexdigest()
    assert model_sha256(AsrConfig(model_dir=str(tmp_path / "no-model"))) is None
    info = node_info(config)
    assert info.config_sha256 == config_sha256(config) and info.kernel and info.arch


def test_histogram_buckets_are_cumulative_and_inclusive():
    h = Histogram((0.1, 0.5, 1.0))
    for v in (0.05, 0.1, 0.3, 0.5, 0.7, 4.0):
        h.observe(("mic",), v)
    h.observe(("hall",), 0.2)
    samples = {s.labels: s for s in h.samples()}
    mic = samples[("mic",)]
    assert mic.buckets == ((0.1, 2), (0.5, 4), (1.0, 5), (float("inf"), 6))  # le: a value on a bound counts in it
    assert mic.count == 6 and abs(mic.sum - 5.65) < 1e-9
    assert samples[("hall",)].buckets[-1] == (float("inf"), 1)
    t0 = time.perf_counter()
    for _ in range(20000):
        h.observe(("mic",), 0.3)
    per_call_us = (time.perf_counter() - t0) / 20000 * 1e6
    print(f"Histogram.observe: {per_call_us:.2f} us per call")  # a final or a decode: far below its cost
