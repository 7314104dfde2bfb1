"""Health pieces: glibc heap and trim, allocator detection, leak watch, thermal, commands, Prometheus."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import urllib.request

import pytest

from voxnode.config import Config
from voxnode.config.health import HealthConfig
from voxnode.config.mqtt import sanitize_node_id
from voxnode.health.leakwatch import LeakWatch
from voxnode.health.memory import TraceSnapshots
from voxnode.health.thermal import Thermal
from voxnode.mqtt.commands import CommandError, parse_command
from voxnode.mqtt.localbroker import free_port
from voxnode.standin import StandInDaemon

TRIM_CHILD = r"""
import json
from voxnode.health.memory import Heap, python_allocator
from voxnode.health.process import rss_bytes
h = Heap()
blobs = [bytes(200) + bytes([i % 256]) for i in range(200_000)]   # ~50 MB of small objects in malloc's heap
grown = h.info()
del blobs
before = h.info()
returned = h.trim(rss_bytes(), rss_bytes)
print(json.dumps({"alloc": python_allocator(), "grown": grown, "before": before, "returned": returned}))
"""


def test_malloc_trim_returns_freed_heap_under_pythonmalloc_malloc():
    env = {**os.environ, "PYTHONMALLOC": "malloc"}
    out = subprocess.run([sys.executable, "-c", TRIM_CHILD], capture_output=True, text=True, env=env, check=True)
    import json

    r = json.loads(out.stdout)
    assert r["alloc"] == "malloc"
    assert r["grown"]["source"] == "mallinfo2"
    assert r["grown"]["in_use_bytes"] > 40e6
    assert r["before"]["free_bytes"] > 30e6  # freed but held by malloc
    assert r["returned"] > 20e6  # malloc_trim(0) gave most of it back (measured in RSS)


def test_allocator_is_reported_as_pymalloc_without_the_env():
    env = {k: v for k, v in os.environ.items() if k != "PYTHONMALLOC"}
    out = subprocess.run(
        [sys.executable, "-c", "from voxnode.health.memory import python_allocator as a; print(a())"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert out.stdout.strip() == "pymalloc"


def test_leak_watch_flags_steady_growth_not_a_step():
    w = LeakWatch(window_s=600, threshold_bytes=20e6)
    base = 100_000_000
    for i in range(0, 700, 30):  # one step of 50 MB (a model load), then flat
        assert not w.add(i, base + (50_000_000 if i > 60 else 0))
    w2 = LeakWatch(window_s=600, threshold_bytes=20e6)
    flagged = [w2.add(i, base + i * 60_000) for i in range(0, 700, 30)]  # 60 kB/s = 36 MB per window
    assert flagged[-1] and not flagged[0]
    assert w2.report()["growth_bytes"] > 30e6
    w3 = LeakWatch(window_s=600, threshold_bytes=20e6)
    assert not any(w3.add(i, base + i * 10_000) for i in range(0, 700, 30))  # 6 MB per window: below threshold


def test_thermal_from_sysfs(tmp_path):
    # A stand-in /sys tree: this machine has no thermal zones or Raspberry Pi firmware node.
    for n, (kind, milli) in enumerate([("cpu-thermal", "51234"), ("gpu-thermal", "48000")]):
        z = tmp_path / f"sys/class/thermal/thermal_zone{n}"
        z.mkdir(parents=True)
        (z / "temp").write_text(milli + "\n")
        (z / "type").write_text(kind + "\n")
    fw = tmp_path / "sys/devices/platform/soc/soc:firmware"
    fw.mkdir(parents=True)
    (fw / "get_throttled").write_text("50005\n")
    r = Thermal(tmp_path).report()
    assert r["soc_temp_c"] == 51.2 and r["zones_c"] == {"cpu-thermal": 51.2, "gpu-thermal": 48.0}
    t = r["throttled"]
    assert t["under_voltage"] and t["throttled"] and not t["freq_capped"]
    assert t["under_voltage_occurred"] and t["throttled_occurred"]
    empty = Thermal(tmp_path / "nothing").report()
    assert empty == {"soc_temp_c": None, "zones_c": {}, "throttled": None}


def test_tracemalloc_snapshot_reports_growth():
    import tracemalloc

    was = tracemalloc.is_tracing()
    t = TraceSnapshots()
    try:
        first = t.take()  # starts tracing if it was off (field debugging without a restart)
        assert first["growth"] is None and first["tracing_started_now"] == (not was)
        hoard = [bytearray(1000) for _ in range(2000)]  # noqa: F841 - the growth under test
        second = t.take()
        assert second["growth"] and any(g["bytes_diff"] >= 1_000_000 for g in second["growth"])
        assert second["top"] and second["top"][0]["bytes"] >= 1_000_000
        assert second["since_s"] is not None
    finally:
        if not was:
            tracemalloc.stop()


def test_command_parsing():
    s = ["mic", "hall"]
    assert parse_command(b'{"cmd":"mute","stream":"hall","id":"x"}', max_bytes=100, streams=s).stream == "hall"
    assert parse_command(b'{"cmd":"memory"}', max_bytes=100, streams=s).name == "memory"
    for payload, code in [
        (b"", "malformed"),
        (b"null", "malformed"),
        (b'{"cmd": 3}', "malformed"),
        (b'{"cmd":"mute","stream":5}', "bad_argument"),
        (b'{"cmd":"x","id":7}', "bad_argument"),
        (b"x" * 101, "too_large"),
    ]:
        with pytest.raises(CommandError) as e:
            parse_command(payload, max_bytes=100, streams=s)
        assert e.value.code == code, payload


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (b'{"stream":"mic"}', 'missing "cmd" (one of: mute, '),
        (b'{"cmd":["mute"],"stream":"mic"}', '"cmd" must be a command\'s name (one of: mute, '),
        (b'{"cmd":"mute"}', 'mute: "stream" is required (one of: mic, hall)'),
        (b'{"cmd":"mute","stream":5}', 'mute: "stream" must be a stream\'s name (one of: mic, hall)'),
        # Before: the last "cmd" was carried out (the stream unmuted), with no word of the first.
        (b'{"cmd":"mute","stream":"mic","cmd":"unmute"}', "command has 'cmd' more than once"),
    ],
)
def test_a_refused_command_says_what_is_wrong_with_it(payload, message):
    """Before, a "cmd" or "stream" that was there but not a string was reported missing."""
    with pytest.raises(CommandError) as e:
        parse_command(payload, max_bytes=100, streams=["mic", "hall"])
    assert e.value.message.startswith(message), e.value.message


def test_node_id_is_sanitised():
    assert sanitize_node_id("kitchen-pi.local") == "kitchen-pi"
    assert sanitize_node_id("pi 4 (hall)") == "pi_4__hall_"
    assert sanitize_node_id("") == "voxnode"
    assert len(sanitize_node_id("x" * 200)) == 64


# What the stand-in's one stream ("mic") reports: counters the exporter must show as they are.
MIC = {"frames": 500, "xruns": 2, "dropped_frames": 3, "queue_depth": 1, "last_frame_mono": 0.0}


def test_prometheus_exporter_reads_the_reporter_live():
    """No health tick runs here: every scrape reads the reporter's state at that moment."""
    pytest.importorskip("prometheus_client")
    from voxnode.events import TranscriptEvent
    from voxnode.health.prometheus import PrometheusError, PrometheusExporter
    from voxnode.health.reporter import HealthReporter

    port = free_port()
    reporter = HealthReporter(HealthConfig(), "n1", StandInDaemon(Config(), MIC))
    exp = PrometheusExporter(HealthConfig(prometheus=True, prometheus_port=port), reporter)
    url = f"http://127.0.0.1:{port}/metrics"
    exp.start()
    try:
        before = urllib.request.urlopen(url, timeout=5).read().decode()
        t = 1_800_000_000.0
        final = TranscriptEvent("final", "mic", "mic-1", "hello", t - 2, t - 1, 420.0, -0.2, speech_snr_db=7.5)
        reporter.observe(final)
        reporter.observe_decode("mic", "final", 0.21)
        after = urllib.request.urlopen(url, timeout=5).read().decode()
    finally:
        exp.stop(0.0)
    # Served from the start, zero until the first final (issue 27 item 8; before: absent until then)
    assert 'voxnode_final_latency_seconds_count{node="n1",stream="mic"} 0.0' in before
    assert 'voxnode_stream_xruns_total{node="n1",stream="mic"} 2.0' in before
    assert 'voxnode_stream_dropped_frames_total{node="n1",stream="mic"} 3.0' in before
    assert 'voxnode_stream_state{node="n1",state="running",stream="mic"} 1.0' in before
    assert 'voxnode_model_loaded{node="n1"} 0.0' in before and "process_resident_memory_bytes " in before
    assert 'voxnode_final_latency_seconds_bucket{le="0.4",node="n1",stream="mic"} 0.0' in after
    assert 'voxnode_final_latency_seconds_bucket{le="0.5",node="n1",stream="mic"} 1.0' in after
    assert 'voxnode_final_latency_seconds_sum{node="n1",stream="mic"} 0.42' in after
    assert 'voxnode_decode_seconds_bucket{kind="final",le="0.3",node="n1",stream="mic"} 1.0' in after
    # The final's speech over noise: 7.5 dB, between the 5 and 10 dB buckets (zero before it came).
    assert 'voxnode_final_speech_snr_db_count{node="n1",stream="mic"} 0.0' in before
    assert 'voxnode_final_speech_snr_db_bucket{le="5.0",node="n1",stream="mic"} 0.0' in after
    assert 'voxnode_final_speech_snr_db_bucket{le="10.0",node="n1",stream="mic"} 1.0' in after
    assert 'voxnode_stream_last_final_timestamp_seconds{node="n1",stream="mic"}' in after
    assert "voxnode_mqtt_" not in after and "_ms" not in after.replace("_ms_", "")
    with pytest.raises(PrometheusError, match="health.prometheus_port"):
        busy = PrometheusExporter(HealthConfig(prometheus=True, prometheus_port=port), reporter)
        busy.start()
        try:
            PrometheusExporter(HealthConfig(prometheus=True, prometheus_port=port), reporter).start()
        finally:
            busy.stop(0.0)


def test_latency_percentiles():
    from voxnode.health.latency import LatencyWindows

    w = LatencyWindows(window=100)
    for v in range(1, 201):  # only the last 100 (101..200) count
        w.add("mic", float(v))
    r = w.report("mic")
    assert r == {"latency_p50_ms": 150.0, "latency_p95_ms": 195.0, "latency_window": 100}
    assert w.report("hall") == {}


def test_trim_runs_on_schedule_and_after_large_frees():
    from voxnode.health.report import TRIM_FREE_BYTES, HealthMonitor

    clock = [1000.0]
    mon = HealthMonitor(HealthConfig(interval_s=30, malloc_trim_interval_s=300), "n", clock=lambda: clock[0])
    free = {"v": 0}
    real_info = mon.heap.info
    mon.heap.info = lambda: {**(real_info() or {}), "free_bytes": free["v"]}
    mon.housekeeping(1030.0)
    assert mon.heap.trims == 0
    mon.housekeeping(1300.0)  # due
    assert mon.heap.trims == 1
    free["v"] = TRIM_FREE_BYTES  # a large free: trim now, not in 300 s
    mon.housekeeping(1330.0)
    assert mon.heap.trims == 2
    report = mon.collect({"uptime_s": 1.0, "streams": {}}, None, None)
    assert report["memory"]["trim"]["count"] == 2
    assert report["memory"]["leak"]["suspected"] is False


def test_cpu_meter_measures_a_busy_loop():
    import time

    from voxnode.health.process import CpuMeter

    m = CpuMeter()
    assert m.percent() == 0.0  # too soon: no figure from a few milliseconds
    t0, c0 = time.monotonic(), time.process_time()
    # The machine is shared: a spinning thread may get half a core, or a fifth under load. Spin until
    # the process has had 0.5 s of CPU (and the meter's 1 s window has passed), then compare the
    # meter with what the process got, whatever share that was.
    while (time.process_time() - c0 < 0.5 or time.monotonic() - t0 < 1.2) and time.monotonic() - t0 < 30:
        pass
    got = 100 * (time.process_time() - c0) / (time.monotonic() - t0)
    value = m.percent()
    assert got > 1.5  # 0.5 s of CPU within at most 30 s
    assert value > 0.0 and abs(value - got) <= 0.2 * got + 1.0, (value, got)


def test_prometheus_without_mqtt_through_voxnode_run(tmp_path, voxnode_cmd):
    """`voxnode run` with [mqtt] off and Prometheus on: the per-stream mute and the latency histogram
    are served without MQTT too (the reporter hears the finals whatever outputs are on)."""
    pytest.importorskip("prometheus_client")
    import re
    import time
    import wave

    import numpy as np

    from voxnode.audio.wavfile import float_to_s16, read_audio
    from voxnode.demo import bundled_clip

    clip = float_to_s16(read_audio(bundled_clip()))
    gap = np.zeros(32000, dtype=np.int16)  # 2 s: the first utterance ends and gets its final mid-run
    wav = tmp_path / "twice.wav"
    with wave.open(str(wav), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(np.concatenate([clip, gap, clip, gap]).tobytes())
    port = free_port()
    cfg = tmp_path / "c.toml"
    cfg.write_text(f"[health]\ninterval_s = 1.0\nprometheus = true\nprometheus_port = {port}\n")
    p = subprocess.Popen(
        [*voxnode_cmd, "run", "--config", str(cfg), "--file", str(wav), "--duration", "20"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONMALLOC": "malloc"},
    )
    text = ""
    try:
        end = time.monotonic() + 30
        # The histogram is served from the start (zero): wait for its first final's count.
        counted = re.compile(r'^voxnode_final_latency_seconds_count\{[^}]*stream="mic"\} [1-9]', re.M)
        while not counted.search(text) and time.monotonic() < end and p.poll() is None:
            try:
                text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=1).read().decode()
            except OSError:
                pass
            time.sleep(0.2)
    finally:
        # Seen what it serves: stopped as systemd stops it, not left to play the file's second half
        # (~7 s; it is there to keep the run going while the first final is counted).
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=30)
    node = sanitize_node_id(socket.gethostname())
    assert "process_resident_memory_bytes" in text, err
    assert f'voxnode_stream_frames_total{{node="{node}",stream="mic"}}' in text
    assert f'voxnode_stream_muted{{node="{node}",stream="mic"}} 0.0' in text
    assert counted.search(text) and f'voxnode_final_latency_seconds_count{{node="{node}",stream="mic"}}' in text, text
    assert f'voxnode_model_loaded{{node="{node}"}} 1.0' in text and 'model="whisper-tiny.en"' in text
    assert "voxnode_mqtt_" not in text  # MQTT is off
    assert p.returncode == 0 and "Traceback" not in err
