"""The daemon's main loop: it ticks only as often as its hooks need, and requests wake it at once."""

import os
import signal
import threading
import time

from voxnode.config import Config
from voxnode.daemon import IDLE_TICK_S, Daemon, RunOptions
from voxnode.lifecycle import TICK_S, Hook
from voxnode.systemd.notify import NotifyHook
from voxnode.systemd.watchdog import WatchdogHook


class _Notifier:
    enabled = True

    def send(self, *assignments):
        return True


class _PlainHook(Hook):  # says nothing about how often it needs a tick
    def tick(self, host, now): ...


def test_tick_interval_follows_the_hooks():
    assert Daemon(Config(), [])._tick_interval() == IDLE_TICK_S
    assert Daemon(Config(), [], RunOptions(file="x.wav"))._tick_interval() == TICK_S
    assert Daemon(Config(), [], hooks=[_PlainHook()])._tick_interval() == TICK_S
    notify = NotifyHook(_Notifier())
    d = Daemon(Config(), [], hooks=[notify, WatchdogHook(_Notifier(), 20.0)])
    assert d._tick_interval() == TICK_S  # starting: READY=1 as soon as audio arrives
    notify.state = "ready"
    assert d._tick_interval() == 1.0
    assert Daemon(Config(), [], hooks=[WatchdogHook(_Notifier(), 0.4)])._tick_interval() == TICK_S


def test_signal_wakes_the_main_loop_wait_at_once():
    d = Daemon(Config(), [])
    old = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    d.install_signal_handlers()
    try:
        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGHUP)).start()
        t0 = time.monotonic()
        assert d._wait_request(5.0) == "reload"
        assert time.monotonic() - t0 < 2.5  # woken by the request, well before the 5 s timeout
        threading.Timer(0.1, d.request_stop).start()
        t0 = time.monotonic()
        assert d._wait_request(5.0) == "stop"
        assert time.monotonic() - t0 < 2.5
        assert d._wait_request(0.05) is None
    finally:
        for s, h in old.items():
            signal.signal(s, h)
