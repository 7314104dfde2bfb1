"""Decode scheduler policy: fairness, finals first, back-pressure accounting.

The engine here is a stand-in (GateEngine): these tests are about the order in
which the scheduler hands out work and what it counts when it cannot, which
needs an engine whose timing the test controls.  The real Whisper engine runs
in test_pipeline_alsa.py.
"""

import dataclasses
import logging
import threading
import time

import numpy as np
import pytest

from voxnode.config import Config
from voxnode.stream.params import scheduler_params
from voxnode.stream.scheduler import DecodeJob, DecodeScheduler, JobKind, JobOutcome

DEFAULTS = scheduler_params(Config())


class GateEngine:
    """Stand-in engine: blocks each transcribe until the test opens the gate; records the order."""

    def __init__(self):
        self.order = []
        self.gate = threading.Semaphore(0)
        self.entered = threading.Semaphore(0)
        self.fail_on = set()

    def transcribe(self, audio):
        tag = float(audio[0])
        self.order.append(tag)
        self.entered.release()
        assert self.gate.acquire(timeout=5)
        if tag in self.fail_on:
            raise RuntimeError("engine exploded")
        return type("R", (), {"text": str(tag), "confidence": -0.1, "no_speech_prob": 0.0})()


class Recorder:
    def __init__(self):
        self.done = []
        self.lock = threading.Lock()
        self.cv = threading.Condition(self.lock)

    def __call__(self, job, outcome, result):
        with self.cv:
            self.done.append((job.tag, outcome))
            self.cv.notify_all()

    def wait(self, n, timeout=5):
        with self.cv:
            assert self.cv.wait_for(lambda: len(self.done) >= n, timeout), self.done
            return list(self.done)


def job(stream, kind, tag, rec):
    return DecodeJob(stream, kind, np.full(16, tag, dtype=np.float32), rec, tag)


@pytest.fixture
def sched():
    made = []

    def make(params=DEFAULTS, clock=time.monotonic):
        eng = GateEngine()
        s = DecodeScheduler([eng], params, clock)
        made.append((s, eng))
        return s, eng

    yield make
    for s, eng in made:
        for _ in range(100):
            eng.gate.release()
        s.stop(drain_finals=False, timeout=1)


def test_finals_go_before_partials_and_speculation(sched):
    s, eng = sched()
    rec = Recorder()
    s.start()
    s.submit(job("blocker", JobKind.PARTIAL, 0, rec))
    assert eng.entered.acquire(timeout=5)  # worker busy: everything else queues
    s.submit(job("a", JobKind.PARTIAL, 1, rec))
    s.submit(job("b", JobKind.SPECULATIVE, 2, rec))
    s.submit(job("c", JobKind.FINAL, 3, rec))
    for _ in range(4):
        eng.gate.release()
    rec.wait(4)
    assert eng.order == [0, 3, 2, 1]


def test_talkative_stream_cannot_starve_others(sched):
    s, eng = sched()
    rec = Recorder()
    s.start()
    s.submit(job("loud", JobKind.FINAL, 0, rec))
    assert eng.entered.acquire(timeout=5)
    for i in range(1, 6):  # the talkative stream queues five finals
        s.submit(job("loud", JobKind.FINAL, i, rec))
    s.submit(job("quiet1", JobKind.FINAL, 10, rec))
    s.submit(job("quiet2", JobKind.FINAL, 20, rec))
    for _ in range(8):
        eng.gate.release()
    rec.wait(8)
    # Round robin by least recently served: each quiet stream's only final
    # goes before the talkative stream's second one.
    assert eng.order[:4] == [0, 10, 20, 1]
    assert eng.order[4:] == [2, 3, 4, 5]  # and a stream's own finals stay in order


def test_newer_partial_replaces_queued_one_and_is_counted(sched):
    s, eng = sched()
    rec = Recorder()
    s.start()
    s.submit(job("x", JobKind.FINAL, 0, rec))
    assert eng.entered.acquire(timeout=5)
    s.submit(job("a", JobKind.PARTIAL, 1, rec))
    s.submit(job("a", JobKind.PARTIAL, 2, rec))
    s.submit(job("a", JobKind.PARTIAL, 3, rec))
    for _ in range(2):
        eng.gate.release()
    done = rec.wait(4)
    assert eng.order == [0, 3]
    assert (1, JobOutcome.SKIPPED) in done and (2, JobOutcome.SKIPPED) in done
    assert s.stats()["partials_skipped"] == 2


def test_stale_partial_is_skipped_when_engine_is_behind(sched):
    now = [0.0]
    s, eng = sched(dataclasses.replace(DEFAULTS, partial_max_wait_s=1.0), clock=lambda: now[0])
    rec = Recorder()
    s.start()
    s.submit(job("x", JobKind.FINAL, 0, rec))
    assert eng.entered.acquire(timeout=5)
    s.submit(job("a", JobKind.PARTIAL, 1, rec))
    now[0] = 2.5  # the engine took 2.5 s: the queued partial is out of date
    eng.gate.release()
    done = rec.wait(2)
    assert (1, JobOutcome.SKIPPED) in done
    assert eng.order == [0]
    assert s.stats()["partials_skipped"] == 1


def test_final_overflow_drops_oldest_counted_and_logged(sched, caplog):
    s, eng = sched(dataclasses.replace(DEFAULTS, max_pending_finals=2))
    rec = Recorder()
    s.start()
    s.submit(job("x", JobKind.FINAL, 0, rec))
    assert eng.entered.acquire(timeout=5)
    with caplog.at_level(logging.WARNING, logger="voxnode.stream.scheduler"):
        for i in (1, 2, 3):
            s.submit(job(f"s{i}", JobKind.FINAL, i, rec))
    assert (1, JobOutcome.DROPPED) in rec.wait(1)
    assert s.stats()["finals_dropped"] == 1
    assert any("dropped" in r.getMessage() for r in caplog.records)
    for _ in range(3):
        eng.gate.release()
    done = rec.wait(4)
    assert sorted(t for t, o in done if o == JobOutcome.DONE) == [0, 2, 3]


def test_engine_error_is_reported_and_worker_survives(sched):
    s, eng = sched()
    eng.fail_on = {1.0}
    rec = Recorder()
    s.start()
    s.submit(job("a", JobKind.FINAL, 1, rec))
    s.submit(job("b", JobKind.FINAL, 2, rec))
    eng.gate.release()
    eng.gate.release()
    done = rec.wait(2)
    assert (1, JobOutcome.FAILED) in done and (2, JobOutcome.DONE) in done
    assert s.stats()["failed"] == 1


def test_stop_drains_queued_finals(sched):
    s, eng = sched()
    rec = Recorder()
    s.start()
    for i in range(3):
        s.submit(job(f"s{i}", JobKind.FINAL, i, rec))
    for _ in range(3):
        eng.gate.release()
    s.stop(drain_finals=True, timeout=5)
    assert sorted(t for t, o in rec.done if o == JobOutcome.DONE) == [0, 1, 2]


def test_no_partial_starts_while_a_stream_may_be_at_its_endpoint(sched):
    s, eng = sched()
    rec = Recorder()
    s.start()
    s.hold_partials("b", True)  # stream b went quiet: its speculative final is coming
    s.submit(job("a", JobKind.PARTIAL, 1, rec))
    assert not eng.entered.acquire(timeout=0.3)  # the engine stays free
    s.submit(job("b", JobKind.SPECULATIVE, 2, rec))
    eng.gate.release()
    assert eng.entered.acquire(timeout=5)
    s.hold_partials("b", False)
    eng.gate.release()
    rec.wait(2)
    assert eng.order == [2, 1]
