"""Readiness, liveness and reload planning, in process with the real Daemon and real threads."""

import dataclasses
import threading
import time

from tests.helpers import wait_until
from voxnode.config import Config, parse_config
from voxnode.daemon import Daemon, RunOptions
from voxnode.demo import bundled_clip
from voxnode.heartbeat import Heartbeat
from voxnode.reload import plan_reload
from voxnode.systemd.liveness import liveness, readiness
from voxnode.systemd.watchdog import WatchdogHook, watchdog_interval


class BlockingSink:
    """A sink that hangs on its first event, the way a wedged network write would."""

    def __init__(self):
        self.entered = threading.Event()
        self.release = threading.Event()

    def emit(self, event):
        self.entered.set()
        self.release.wait(30)

    def close(self):
        self.release.set()


class RecordingNotifier:
    """Stands in for the sd_notify transport, which test_notify.py exercises through a real socket."""

    enabled = True

    def __init__(self):
        self.sent = []

    def send(self, *assignments):
        self.sent.append((time.monotonic(), assignments))
        return True


def test_stuck_worker_stops_watchdog_pings():
    config = parse_config("[service]\nworker_stall_s = 1.0\ncapture_stall_s = 1.0\n")
    sink = BlockingSink()
    notifier = RecordingNotifier()
    watchdog = WatchdogHook(notifier, interval_s=0.4)
    daemon = Daemon(config, [sink], RunOptions(file=str(bundled_clip()), duration_s=8.0, levels=True), hooks=[watchdog])
    t = threading.Thread(target=daemon.run)
    t.start()
    try:
        assert sink.entered.wait(5), "the level meter reports after one second of audio"
        blocked_at = time.monotonic()
        assert wait_until(lambda: not liveness(daemon.vitals(), time.monotonic()).ok, timeout=3)
        verdict = liveness(daemon.vitals(), time.monotonic())
        assert "stream-mic: stuck on one unit of work" in verdict.reason
        time.sleep(1.5)  # a sleep on purpose: no ping may come in this window
        # worker_stall_s (1 s) after the block, plus a tick and some scheduling slack.
        late = [s for s in notifier.sent if s[0] > blocked_at + 1.5]
        assert late == [], "no WATCHDOG=1 while a worker is stuck"
        assert any(s[0] < blocked_at for s in notifier.sent), "it pinged while healthy"
    finally:
        sink.release.set()
        daemon.request_stop()
        t.join(10)


def test_registered_heartbeat_and_ready_check():
    daemon = Daemon(Config(), [])
    loaded = threading.Event()

    def engine_loaded():
        return loaded.is_set()

    daemon.ready_checks.append(engine_loaded)
    assert readiness(daemon.vitals()).reason == "waiting for engine_loaded"
    loaded.set()
    assert readiness(daemon.vitals()).ok  # no streams started in this test
    hb = Heartbeat("decode-0")
    daemon.extra_heartbeats.append(hb)
    hb.begin()
    now = time.monotonic()
    assert liveness(daemon.vitals(), now + 5).ok
    assert "decode-0: stuck" in liveness(daemon.vitals(), now + 61).reason  # worker_stall_s default 60
    hb.end()
    assert liveness(daemon.vitals(), now + 61).ok, "an idle worker is never stuck"


def test_watchdog_interval_from_environment():
    assert watchdog_interval({}) is None
    assert watchdog_interval({"WATCHDOG_USEC": "30000000"}, pid=42) == 30.0
    assert watchdog_interval({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "42"}, pid=42) == 30.0
    assert watchdog_interval({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "41"}, pid=42) is None
    assert watchdog_interval({"WATCHDOG_USEC": "soon"}, pid=42) is None
    assert watchdog_interval({"WATCHDOG_USEC": "0"}, pid=42) is None


def _streams(*specs):
    text = "".join(f'[[streams]]\nname = "{n}"\ndevice = "{d}"\n' for n, d in specs)
    return parse_config(text)


def test_reload_plan():
    old = _streams(("a", "hw:1"), ("b", "hw:2"), ("c", "hw:3"))
    new = _streams(("a", "hw:1"), ("b", "hw:9"), ("d", "hw:4"))
    plan = plan_reload(old, new)
    assert (plan.keep, plan.restart, plan.start, plan.stop) == (("a",), ("b",), ("d",), ("c",))
    assert plan.needs_restart == ()

    # Shared capture settings restart every stream; log and service apply live.
    tweaked = dataclasses.replace(
        new, audio=dataclasses.replace(new.audio, buffer_periods=24), log=dataclasses.replace(new.log, level="debug")
    )
    assert plan_reload(new, tweaked).restart == ("a", "b", "d")
    assert plan_reload(new, dataclasses.replace(new, log=tweaked.log)).restart == ()

    # The model cannot be swapped under a running engine: reported, not silently ignored.
    other_model = dataclasses.replace(new, asr=dataclasses.replace(new.asr, num_threads=2))
    plan = plan_reload(new, other_model)
    assert plan.needs_restart == ("asr",) and "take effect after a restart" in plan.summary()

    # More decode engines need a restart, though the rest of [stream] applies on reload.
    more_engines = dataclasses.replace(new, stream=dataclasses.replace(new.stream, decode_workers=2))
    plan = plan_reload(new, more_engines)
    assert plan.restart == ("a", "b", "d") and plan.needs_restart == ("stream.decode_workers",)
