"""The wall clock's state in health (voxnode/health/clock.py). Setting the system clock needs
CAP_SYS_TIME, which tests do not have, so the steps come from stand-in clocks; the kernel's
synchronised state is read for real."""

from __future__ import annotations

import logging
import sys

import pytest

from voxnode.health.clock import STEP_S, ClockWatch, kernel_synchronized


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="adjtimex is Linux's")
def test_the_kernel_says_whether_the_clock_is_synchronised():
    assert kernel_synchronized() in (True, False)


class Clocks:
    def __init__(self) -> None:
        self.wall, self.mono, self.synced = 1_000_000.0, 50.0, False

    def run(self, seconds: float) -> None:
        self.wall += seconds
        self.mono += seconds


def test_a_step_is_counted_and_said_a_slew_is_not(caplog):
    c = Clocks()
    with caplog.at_level(logging.INFO, logger="voxnode.health.clock"):
        watch = ClockWatch(lambda: c.synced, lambda: c.wall, lambda: c.mono)
        assert watch.report()["synchronized"] is None and caplog.records == []  # said once the daemon runs
        c.run(30)
        watch.check()  # the first health tick
        assert watch.report() == {"synchronized": False, "steps": 0, "last_step_s": None}
        c.run(30)
        c.wall += 0.015  # NTP slewing at 500 ppm over a 30 s interval
        watch.check()
        assert watch.steps == 0
        c.run(30)
        c.wall += 7200.4  # the NTP client sets a clock that booted two hours behind
        c.synced = True
        watch.check()
        assert watch.report() == {"synchronized": True, "steps": 1, "last_step_s": 7200.4}
        c.run(30)
        c.wall -= STEP_S  # someone runs `date -s`, a second back
        watch.check()
        assert watch.steps == 2 and watch.last_step_s == -STEP_S
        c.synced = False  # the NTP client gone for ~9 hours: the kernel's maximum error passed 16 s
        watch.check()
    lines = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert lines == [
        ("INFO", "system clock not synchronised (no NTP time yet): the times voxnode writes follow it"),
        (
            "WARNING",
            "system clock stepped +7200.4 s (NTP set it): times written before it (transcripts, health) "
            "are off by that much",
        ),
        ("INFO", "system clock synchronised"),
        ("WARNING", "system clock stepped -1.0 s: times written before it (transcripts, health) are off by that much"),
        ("INFO", "system clock not synchronised (no NTP time any more): the times voxnode writes follow it"),
    ]


def test_a_synchronised_clock_at_start_says_nothing_and_an_unknown_one_reports_null(caplog):
    c = Clocks()
    c.synced = True
    with caplog.at_level(logging.DEBUG, logger="voxnode.health.clock"):
        watch = ClockWatch(lambda: c.synced, lambda: c.wall, lambda: c.mono)
        c.run(30)
        watch.check()
    assert caplog.records == [] and watch.report()["synchronized"] is True
    unknown = ClockWatch(lambda: None, lambda: c.wall, lambda: c.mono)
    unknown.check()
    assert unknown.report() == {"synchronized": None, "steps": 0, "last_step_s": None}
