"""MqttService in-process against a real Mosquitto: spool bound, bad events, health providers.

A stand-in daemon supplies snapshot()/mute here (no audio needed for these); the
subprocess tests (test_payloads, test_outages) use the real Daemon.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time

from tests.mqtt.broker import Broker
from voxnode.config import Config
from voxnode.events import TranscriptEvent
from voxnode.mqtt.service import MqttService

BASE = "voxnode/testnode"


class StandInDaemon:
    def __init__(self):
        self.muted = set()

    def snapshot(self):
        return {
            "uptime_s": 1.0,
            "streams": {
                "mic": {"state": "running", "queue_depth": 0, "dropped_frames": 0, "xruns": 0, "device_errors": 0}
            },
        }

    def stream_names(self):
        return ["mic"]

    def is_muted(self, s):
        return s in self.muted

    def set_muted(self, s, m):
        (self.muted.add if m else self.muted.discard)(s)

    def request_reload(self):
        pass


def make_service(tmp_path, broker: Broker, **mqtt) -> MqttService:
    base = Config()
    cfg = dataclasses.replace(
        base,
        mqtt=dataclasses.replace(
            base.mqtt,
            enabled=True,
            host="127.0.0.1",
            port=broker.port,
            node_id="testnode",
            reconnect_min_s=0.2,
            reconnect_max_s=1.0,
            spool_path=str(tmp_path / "spool.sqlite"),
            **mqtt,
        ),
    )
    return MqttService(cfg)


def final(i: int) -> dict:
    t = time.time()
    return TranscriptEvent("final", "mic", f"f-{i}", f"text {i}", t - 1, t, 100.0, -0.1).as_dict()


def test_spool_bound_drops_oldest_counted_and_seq_shows_the_gap(tmp_path, monitor_for, validate, caplog):
    b = Broker(tmp_path / "broker", persistence=True)  # port chosen, broker not started: an outage from the start
    # inflight_window=1: paho holds seq 1 in memory (handed before the bound dropped 2..5), so the gap shows.
    svc = make_service(tmp_path, b, spool_max_messages=10, inflight_window=1)
    svc.start()
    daemon = StandInDaemon()
    with caplog.at_level(logging.ERROR, logger="voxnode.mqtt"):
        slowest = 0.0
        for i in range(1, 16):
            event = svc.journal.record(final(i))  # what the daemon's sequencer does before the sinks see it
            t0 = time.perf_counter()
            svc.sink.emit(event)  # the broker is unreachable: emit must still return at once
            slowest = max(slowest, time.perf_counter() - t0)
            time.sleep(0.01)
        assert slowest < 0.1, f"emit blocked for {slowest * 1000:.1f} ms"  # shared CPUs: allow preemption
        end = time.monotonic() + 5
        while svc.spool.dropped_total < 5 and time.monotonic() < end:
            time.sleep(0.02)
    assert svc.spool.dropped_total == 5 and svc.spool.count == 10
    assert "dropped the 1 oldest unsent final(s), seq 5..5 (5 dropped in total)" in caplog.text
    report = svc.collect_health(daemon, time.monotonic())
    validate("health", report)
    assert report["mqtt"]["spool_dropped_total"] == 5 and report["mqtt"]["backlog"] == 10
    assert report["mqtt"]["connected"] is False and "cannot connect" in report["mqtt"]["last_error"]
    b.start()
    try:
        mon = monitor_for(b)
        end = time.monotonic() + 10
        while svc.spool.count and time.monotonic() < end:
            time.sleep(0.05)
        assert svc.spool.count == 0
        got = [json.loads(p) for p in mon.on(f"{BASE}/mic/transcript")]
        # the monitor subscribed after the replay started, so check the broker-acknowledged count instead
        assert svc.publisher.stats.published == 11
        assert all(m["seq"] == 1 or m["seq"] >= 6 for m in got)
    finally:
        svc.sink.close()
        b.stop()


def test_a_bad_event_does_not_stop_later_finals(tmp_path, broker, monitor_for):
    mon = monitor_for(broker)
    svc = make_service(tmp_path, broker)
    svc.start()
    try:
        svc.sink.emit({"type": "final", "text": "no stream key"})
        svc.sink.emit({**final(1), "oops": object()})  # not JSON-serialisable
        svc.sink.emit(final(2))
        assert mon.wait_for(lambda: mon.on(f"{BASE}/mic/transcript"))
        assert [json.loads(p)["id"] for p in mon.on(f"{BASE}/mic/transcript")] == ["f-2"]
        assert svc.publisher.stats.bad_events == 2
    finally:
        svc.sink.close()


def test_health_survives_a_failing_engine_provider_and_reports_the_engine(tmp_path, broker, monitor_for, validate):
    mon = monitor_for(broker)
    svc = make_service(tmp_path, broker)
    daemon = StandInDaemon()
    calls = {"n": 0}

    def provider(d):
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("engine not ready")
        return {
            "runtime": "litert",
            "model": "whisper-tiny.en",
            "xnnpack_applied": True,
            "ops_total": 120,
            "ops_not_delegated": 0,
        }

    svc._engine_info = provider
    svc.start()
    try:
        assert mon.wait_for(lambda: svc.publisher.stats.connected)
        svc.tick(daemon, time.monotonic())  # provider raises: model not loaded, no exception
        first = svc.last_health
        svc._health_now.set()
        svc.tick(daemon, time.monotonic())
        second = svc.last_health
        assert first["model"]["loaded"] is False
        assert second["model"] == {
            "name": "whisper-tiny.en",
            "loaded": True,
            "xnnpack_all_ops": True,
            "info": provider(daemon),
        }
        validate("health", second)
        svc.sink.emit(final(1))
        assert mon.wait_for(lambda: mon.on(f"{BASE}/mic/transcript"))
        assert json.loads(mon.on(f"{BASE}/mic/transcript")[0])["model"] == "whisper-tiny.en"
    finally:
        svc.sink.close()


def test_engine_info_is_found_on_the_daemon_without_importing_the_engine():
    from types import SimpleNamespace

    from voxnode.mqtt.service import engine_info_from

    info = {"model": "whisper-tiny.en", "xnnpack_applied": True, "ops_total": 10, "ops_not_delegated": 0}
    engine = SimpleNamespace(info=SimpleNamespace(as_dict=lambda: info))
    assert engine_info_from(SimpleNamespace(recognizer=engine)) == info  # the stream branch's Daemon.recognizer
    assert engine_info_from(SimpleNamespace(speech=SimpleNamespace(engine=engine))) == info
    assert engine_info_from(SimpleNamespace(recognizer=None)) is None
