"""Decode scheduler policy: fairness, finals first, back-pressure accounting.

The engines here are stand-ins (GateEngine, InstantEngine): these tests are
about the order in which the scheduler hands out work, what it counts when it
cannot and what it keeps, which needs an engine whose timing the test controls.
The real Whisper engine runs in test_pipeline_alsa.py and
test_wyoming_fairness_alsa.py.
"""

import dataclasses
import logging
import threading
import time

import numpy as np
import pytest

from voxnode.asr.recognizer import DecodeAbandoned
from voxnode.config import Config
from voxnode.stream.jobs import DecodeJob, JobKind, JobOutcome
from voxnode.stream.params import scheduler_params
from voxnode.stream.scheduler import DecodeScheduler

pytestmark = pytest.mark.unit  # make check: needs only the venv (pyproject.toml markers)

DEFAULTS = scheduler_params(Config())


class GateEngine:
    """Stand-in engine: blocks each transcribe until the test opens the gate; records the order."""

    def __init__(self):
        self.order = []
        self.gate = threading.Semaphore(0)
        self.entered = threading.Semaphore(0)
        self.fail_on = set()
        self.calls = []
        self.abandoned = []

    def transcribe(self, audio, role="final", prompt=None, hotwords=None, abandon=None):
        tag = float(audio[0])
        self.order.append(tag)
        self.calls.append((tag, role, prompt, hotwords))
        self.entered.release()
        # Like the real engine, a call given up by the scheduler stops before its next "model call".
        deadline = time.monotonic() + 5
        while not self.gate.acquire(timeout=0.005):
            if abandon is not None and abandon.is_set():
                self.abandoned.append(tag)
                raise DecodeAbandoned
            assert time.monotonic() < deadline, "the test never opened the gate"
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
        s.stop(time.monotonic() + 1, drain_finals=False)


def test_finals_go_before_partials_and_speculation(sched):
    """Within a tenant, a final before a speculative final; both before any partial."""
    s, eng = sched()
    rec = Recorder()
    s.start()
    s.submit(job("blocker", JobKind.PARTIAL, 0, rec))
    assert eng.entered.acquire(timeout=5)  # worker busy: everything else queues
    s.submit(job("a", JobKind.PARTIAL, 1, rec))
    s.submit(job("b", JobKind.SPECULATIVE, 2, rec))  # b's next utterance, in its pause
    s.submit(job("b", JobKind.FINAL, 3, rec))  # b's last one
    for _ in range(4):
        eng.gate.release()
    rec.wait(4)
    assert eng.order == [0, 3, 2, 1]


def test_a_wake_words_check_goes_first_greedy_and_is_never_given_up(sched):
    """A wake word's check (stream/wake_check.py) before its stream's final and speculative final, decoded as a
    partial is (greedy); a partial running gives way to it, and nothing makes it give way."""
    s, eng = sched()
    rec = Recorder()
    s.start()
    s.submit(job("a", JobKind.PARTIAL, 0, rec))
    assert eng.entered.acquire(timeout=5)  # a's partial holds the only engine
    s.submit(job("a", JobKind.FINAL, 1, rec))
    s.submit(job("a", JobKind.SPECULATIVE, 2, rec))
    s.submit(job("a", JobKind.WAKE, 3, rec))
    assert eng.entered.acquire(timeout=5)  # the partial gave way without the gate being opened for it
    s.submit(job("b", JobKind.FINAL, 4, rec))  # another stream's final waits: the check is not given up
    time.sleep(0.05)
    for _ in range(4):
        eng.gate.release()
    rec.wait(5)
    assert eng.abandoned == [0]
    assert eng.order == [0, 3, 4, 1, 2]
    assert [role for tag, role, _, _ in eng.calls if tag == 3] == ["partial"]
    assert s.stats()["completed"]["WAKE"] == 1


def test_a_running_partial_gives_way_to_a_final(sched):
    s, eng = sched()
    rec = Recorder()
    s.start()
    s.submit(job("a", JobKind.PARTIAL, 1, rec))
    assert eng.entered.acquire(timeout=5)  # the partial holds the only engine
    s.submit(job("b", JobKind.FINAL, 2, rec))
    assert eng.entered.acquire(timeout=5)  # the final starts without the gate being opened for the partial
    eng.gate.release()
    done = rec.wait(2)
    assert done == [(1, JobOutcome.SKIPPED), (2, JobOutcome.DONE)]
    assert eng.abandoned == [1]
    st = s.stats()
    assert st["partials_abandoned"] == 1 and st["partials_skipped"] == 1


def test_a_running_speculative_final_cancelled_gives_the_engine_up(sched):
    """Speech resumed: the speculative final's text is void, so it stops at its next model call and
    the engine is free for what comes next; a final is never given up."""
    s, eng = sched()
    rec = Recorder()
    s.start()
    spec = job("a", JobKind.SPECULATIVE, 1, rec)
    s.submit(spec)
    assert eng.entered.acquire(timeout=5)  # running
    s.cancel(spec)
    s.submit(job("b", JobKind.PARTIAL, 2, rec))
    assert eng.entered.acquire(timeout=5)  # the partial starts without the gate being opened for the speculation
    eng.gate.release()
    assert rec.wait(2) == [(1, JobOutcome.CANCELLED), (2, JobOutcome.DONE)]
    assert eng.abandoned == [1]
    st = s.stats()
    assert st["cancelled"] == 1 and st["partials_abandoned"] == 0

    final = job("a", JobKind.FINAL, 3, rec)
    s.submit(final)
    assert eng.entered.acquire(timeout=5)
    s.cancel(final)  # a running final is not stopped: its result is only reported as cancelled
    eng.gate.release()
    assert rec.wait(3)[2] == (3, JobOutcome.CANCELLED)
    assert eng.abandoned == [1]


def test_a_partial_keeps_the_engine_when_another_is_free_but_not_against_its_own_stream():
    engines = [GateEngine(), GateEngine()]
    s = DecodeScheduler(engines, dataclasses.replace(DEFAULTS, workers=2))
    rec = Recorder()
    s.start()
    try:

        def running(n):
            deadline = time.monotonic() + 5
            while sum(len(e.order) for e in engines) < n:
                assert time.monotonic() < deadline, [e.order for e in engines]
                time.sleep(0.005)

        s.submit(job("a", JobKind.PARTIAL, 1, rec))
        running(1)
        s.submit(job("b", JobKind.SPECULATIVE, 2, rec))  # the second worker is free: nobody gives way
        running(2)
        assert sorted(e.order[0] for e in engines) == [1, 2]
        assert not any(e.abandoned for e in engines)
        s.submit(job("a", JobKind.SPECULATIVE, 3, rec))  # its own stream's speculation: the partial stops
        rec.wait(1)
        assert [e.abandoned for e in engines if e.abandoned] == [[1]]
        for e in engines:
            for _ in range(3):
                e.gate.release()
        done = rec.wait(3)
        assert sorted(done, key=lambda d: d[0]) == [(1, JobOutcome.SKIPPED), (2, JobOutcome.DONE), (3, JobOutcome.DONE)]
    finally:
        for e in engines:
            for _ in range(10):
                e.gate.release()
        s.stop(time.monotonic() + 1, drain_finals=False)


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


def test_final_overflow_drops_from_the_tenant_with_most_queued(sched):
    """wyoming.max_clients may be 256, max_pending_finals is 64: a flood of requests must not push
    out a microphone's final."""
    s, eng = sched(dataclasses.replace(DEFAULTS, max_pending_finals=3))
    rec = Recorder()
    s.start()
    s.submit(job("x", JobKind.FINAL, 0, rec))
    assert eng.entered.acquire(timeout=5)
    s.submit(job("kitchen", JobKind.FINAL, 1, rec))  # the oldest queued
    for n in (2, 3, 4):
        s.submit(wyoming(n, JobKind.FINAL, n, rec))
    assert rec.wait(1) == [(2, JobOutcome.DROPPED)]
    for _ in range(4):
        eng.gate.release()
    done = rec.wait(5)
    assert sorted(t for t, o in done if o == JobOutcome.DONE) == [0, 1, 3, 4]


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
    s.stop(time.monotonic() + 5, drain_finals=True)
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


def test_role_and_the_streams_prompt_reach_the_engine(sched):
    """Partials ask for a quick decode, finals (and speculative finals) for the full one; a job
    carries its stream's prompt and hotwords, None meaning the engine's own ([asr])."""
    s, eng = sched()
    rec = Recorder()
    s.start()
    s.submit(
        DecodeJob(
            "a", JobKind.FINAL, np.full(16, 1.0, np.float32), rec, 1.0, prompt="Rooms: snug.", hotwords=("Sonos",)
        )
    )
    s.submit(DecodeJob("b", JobKind.PARTIAL, np.full(16, 2.0, np.float32), rec, 2.0))
    s.submit(DecodeJob("c", JobKind.SPECULATIVE, np.full(16, 3.0, np.float32), rec, 3.0))
    for _ in range(3):
        eng.gate.release()
    rec.wait(3)
    assert sorted(eng.calls) == [
        (1.0, "final", "Rooms: snug.", ("Sonos",)),
        (2.0, "partial", None, None),
        (3.0, "final", None, None),
    ]


def test_pipeline_params_take_the_streams_own_prompt():
    from voxnode.config.loader import parse_config
    from voxnode.stream.params import pipeline_params

    cfg = parse_config(
        '[asr]\nprompt = "global"\n[[streams]]\nname = "kitchen"\ndevice = "hw:1"\nprompt = "Kitchen: Hue lights."\n'
        'hotwords = ["Hue"]\n[[streams]]\nname = "hall"\ndevice = "hw:2"\n'
    )
    kitchen, hall = pipeline_params(cfg, "kitchen"), pipeline_params(cfg, "hall")
    assert (kitchen.prompt, kitchen.hotwords) == ("Kitchen: Hue lights.", ("Hue",))
    assert (hall.prompt, hall.hotwords) == (None, None)  # the engine's [asr] prompt applies


def wyoming(n, kind, tag, rec):
    """A job as a Wyoming request submits it: a key per request, all of them one tenant."""
    return DecodeJob(f"wyoming-{n}", kind, np.full(16, tag, dtype=np.float32), rec, tag, tenant="wyoming:requests")


def test_a_microphone_final_waits_for_at_most_one_wyoming_request(sched):
    """Issue 27: each Wyoming request has a key of its own that had never been served, so all of
    them went before a microphone's final (8 clients: finals 18-126 s late). The requests take one
    turn between two of the microphone's, and among themselves keep the order they came in."""
    s, eng = sched()
    rec = Recorder()
    s.start()
    s.submit(job("kitchen", JobKind.PARTIAL, 0.5, rec))  # the microphone has been served before
    assert eng.entered.acquire(timeout=5)
    eng.gate.release()
    rec.wait(1)
    s.submit(wyoming(1, JobKind.FINAL, 1, rec))
    assert eng.entered.acquire(timeout=5)  # request 1 holds the engine
    for n in range(2, 9):  # seven more clients' requests queue up
        s.submit(wyoming(n, JobKind.FINAL, n, rec))
    s.submit(job("kitchen", JobKind.FINAL, 100, rec))
    for _ in range(9):
        eng.gate.release()
    rec.wait(10)
    assert eng.order == [0.5, 1, 100, 2, 3, 4, 5, 6, 7, 8]


def test_a_speculative_final_takes_its_streams_turn_among_wyoming_finals(sched):
    """The microphone's final decoded in the pause is ready at the endpoint only if it need not
    wait for every queued Wyoming final (issue 27 probe: p95 1.49 s -> 1.16 s)."""
    s, eng = sched()
    rec = Recorder()
    s.start()
    s.submit(wyoming(1, JobKind.FINAL, 1, rec))
    assert eng.entered.acquire(timeout=5)
    for n in (2, 3, 4):
        s.submit(wyoming(n, JobKind.FINAL, n, rec))
    s.submit(job("kitchen", JobKind.SPECULATIVE, 100, rec))
    for _ in range(5):
        eng.gate.release()
    rec.wait(5)
    assert eng.order == [1, 100, 2, 3, 4]


def test_back_to_back_wyoming_requests_never_put_two_ahead_of_a_microphone(sched):
    """Eight clients, each sending its next request as soon as the last one is answered, while two
    microphones' finals (and partials) come and go: from the moment a microphone's final is queued
    until it starts, at most one Wyoming request is decoded (the one running then), and at most
    one job of the other microphone."""
    s, eng = sched()
    rec = Recorder()
    count = [0]

    def again(job_, outcome, result):  # the client's next request, at once (none once dropped at the stop)
        rec(job_, outcome, result)
        if outcome != JobOutcome.DONE:
            return
        count[0] += 1
        n = 100 * count[0] + int(job_.tag) % 100
        s.submit(wyoming(n, JobKind.FINAL, n, again))

    s.start()
    for n in range(8):
        s.submit(wyoming(n, JobKind.FINAL, n, again))
    waits = []
    for step in range(60):
        assert eng.entered.acquire(timeout=5)
        if step % 5 == 1:
            mic = ("kitchen", "hall")[step % 2]
            tag = 1e6 + step
            s.submit(job(mic, JobKind.PARTIAL, tag + 0.5, rec))
            s.submit(job(mic, JobKind.FINAL, tag, rec))
            waits.append((tag, len(eng.order) - 1))  # the job running now is the first one ahead
        eng.gate.release()
    for _ in range(200):
        eng.gate.release()
    for tag, first in waits:
        ahead = eng.order[first : eng.order.index(tag)]
        assert len([t for t in ahead if t < 1e6]) <= 1, (tag, ahead)
        assert len([t for t in ahead if t >= 1e6]) <= 1, (tag, ahead)


def piece(n, tag, rec):
    """A piece of a Wyoming request's final as wyoming_stt/slices.py submits it: background work."""
    return dataclasses.replace(wyoming(n, JobKind.FINAL, tag, rec), background=True)


def test_a_microphone_final_goes_before_every_wyoming_piece_and_the_piece_decoding_yields(sched):
    """Issue 27 on a slow host: round robin gave the microphone one turn per Wyoming request (6.5 s
    of engine time each there: end of speech -> final p95 54 s). Pieces of requests are background
    work: a microphone's final, and its speculative final although the microphone was served
    last, go before every waiting piece; the piece decoding gives the engine up at its next model
    call and then runs again first. It yields MAX_YIELDS times at most, so it always finishes: a
    final that comes after that waits for it."""
    from voxnode.stream.policy import MAX_YIELDS

    s, eng = sched()
    rec = Recorder()
    s.start()
    s.submit(piece(1, 1, rec))
    assert eng.entered.acquire(timeout=5)  # a piece holds the engine
    for n in range(2, 9):
        s.submit(piece(n, n, rec))
    s.submit(job("kitchen", JobKind.FINAL, 100, rec))
    assert eng.entered.acquire(timeout=5)  # the microphone's final: piece 1 gave the engine up
    assert eng.abandoned == [1]
    s.submit(job("hall", JobKind.FINAL, 200, rec))
    s.submit(job("kitchen", JobKind.SPECULATIVE, 101, rec))  # the kitchen was served last
    for _ in range(3):
        eng.gate.release()
        assert eng.entered.acquire(timeout=5)
    expected = [1, 100, 200, 101, 1]
    for k in range(1, MAX_YIELDS):  # piece 1 runs again; each new final makes it yield again
        s.submit(job("hall", JobKind.FINAL, 200 + k, rec))
        assert eng.entered.acquire(timeout=5)
        assert eng.abandoned == [1] * (k + 1)
        eng.gate.release()
        assert eng.entered.acquire(timeout=5)
        expected += [200 + k, 1]
    s.submit(job("hall", JobKind.FINAL, 300, rec))  # piece 1 has yielded MAX_YIELDS times: it finishes
    for _ in range(10):
        eng.gate.release()
    rec.wait(11 + MAX_YIELDS)
    assert eng.order == [*expected, 300, 2, 3, 4, 5, 6, 7, 8]
    assert eng.abandoned == [1] * MAX_YIELDS
    assert [tag for tag, outcome in rec.done if outcome != JobOutcome.DONE] == []


def test_busy_microphones_do_not_starve_wyoming(sched):
    """Six microphones that always have a final queued: a waiting piece of a Wyoming request still
    starts after at most MAX_PASSED_OVER of their finals, every time."""
    from voxnode.stream.policy import MAX_PASSED_OVER

    s, eng = sched()
    rec = Recorder()
    tags = iter(range(1000, 100000))

    def again(job_, outcome, result):  # each microphone's next final, at once
        rec(job_, outcome, result)
        if outcome == JobOutcome.DONE and len(eng.order) < 200:
            s.submit(job(job_.stream, JobKind.FINAL, next(tags), again))

    def next_piece(job_, outcome, result):  # the request's next piece, as slices.py submits it
        rec(job_, outcome, result)
        if outcome == JobOutcome.DONE:
            s.submit(piece(0, job_.tag + 1, next_piece))

    s.start()
    for m in range(6):
        s.submit(job(f"mic{m}", JobKind.FINAL, next(tags), again))
    s.submit(piece(0, 1, next_piece))
    for _ in range(120):
        assert eng.entered.acquire(timeout=5)
        eng.gate.release()
    pieces = [i for i, tag in enumerate(eng.order[:120]) if tag < 1000]
    assert [eng.order[i] for i in pieces] == list(range(1, len(pieces) + 1))
    gaps = [b - a - 1 for a, b in zip([-1, *pieces], pieces, strict=False)]
    assert len(pieces) >= 120 // (MAX_PASSED_OVER + 1) - 1, eng.order[:120]
    assert max(gaps) <= MAX_PASSED_OVER, (gaps, eng.order[:120])
    assert min(gaps[1:]) == MAX_PASSED_OVER, gaps  # and no more often: the microphones come first


class InstantEngine:
    def transcribe(self, audio, role="final", prompt=None, hotwords=None, abandon=None):
        return type("R", (), {"text": "", "confidence": -0.1, "no_speech_prob": 0.0})()


def test_finished_requests_leave_nothing_behind():
    """Issue 27: every Wyoming request's key stayed in the scheduler (20,000 requests: 20,000
    entries, +18 MB, 1.2 ms per pick). Measured with tracemalloc on what the scheduler allocates:
    after 2,000 more requests (a partial and a final each), what it holds is back where it was."""
    import tracemalloc

    from voxnode.stream import scheduler as module

    s = DecodeScheduler([InstantEngine()], dataclasses.replace(DEFAULTS, max_pending_finals=10000))
    done = threading.Semaphore(0)
    s.start()

    def requests(first, n):
        for i in range(first, first + n, 8):  # eight clients at a time
            for k in range(i, i + 8):
                s.submit(wyoming(k, JobKind.PARTIAL, k, lambda *a: None))
                s.submit(wyoming(k, JobKind.FINAL, k, lambda *a: done.release()))
            for _ in range(8):
                assert done.acquire(timeout=10)

    try:
        requests(0, 600)  # the timing windows (500 each) fill up first
        tracemalloc.start()
        only = [tracemalloc.Filter(True, module.__file__)]
        before = tracemalloc.take_snapshot().filter_traces(only)
        requests(1000, 2000)
        after = tracemalloc.take_snapshot().filter_traces(only)
        tracemalloc.stop()
    finally:
        s.stop(time.monotonic() + 1, drain_finals=False)
    grown = sum(d.size_diff for d in after.compare_to(before, "filename"))
    assert grown < 50_000, grown
    assert s.stats()["queue_depth"] == 0


def test_stop_waits_for_a_speculative_final_promoted_while_it_runs(sched):
    """The endpoint confirms a speculative final already decoding (a file's last utterance, most
    often): it is the final now, so nothing gives it up and stop() waits for it. Before, stop()
    counted only queued finals and the daemon exited under it: the demo clip lost its only final in
    8 of 8 runs with 8 CPU hogs (its decode outlived the 5 s stop deadline)."""
    s, eng = sched()
    rec = Recorder()
    s.start()
    spec = job("mic", JobKind.SPECULATIVE, 1, rec)
    s.submit(spec)
    assert eng.entered.acquire(timeout=5)
    assert s.promote(spec)  # running: promoted in place, a final now
    assert spec.kind == JobKind.FINAL
    threading.Timer(0.3, eng.gate.release).start()  # the decode finishes after stop() was called
    t0 = time.monotonic()
    s.stop(time.monotonic() + 5, drain_finals=True)
    assert time.monotonic() - t0 >= 0.25
    assert rec.wait(1) == [(1, JobOutcome.DONE)]
    assert s.stats()["completed"]["FINAL"] == 1


def test_a_final_still_decoding_at_the_stop_deadline_is_reported_dropped_once(sched):
    """Never lost silently: a final that outlives the deadline is reported DROPPED (counted, its
    owner told), and the worker finishing later reports nothing more."""
    s, eng = sched()
    rec = Recorder()
    s.start()
    s.submit(job("mic", JobKind.FINAL, 1, rec))
    assert eng.entered.acquire(timeout=5)
    s.stop(time.monotonic() + 0.2, drain_finals=True)
    assert rec.wait(1) == [(1, JobOutcome.DROPPED)]
    assert s.stats()["finals_dropped"] == 1
    eng.gate.release()  # the engine returns after all
    time.sleep(0.2)
    assert rec.done == [(1, JobOutcome.DROPPED)]


def test_the_debug_line_of_a_decode_says_how_much_of_its_draft_was_taken():
    """A final's text depends on how much of its draft greedy decoding agreed with (docs/asr.md,
    "Drafts"): the scheduler's debug line of each decode says it, as it says a retry's window."""
    from voxnode.asr.recognizer import TranscriptResult
    from voxnode.stream.jobs import decode_line

    j = DecodeJob("mic", JobKind.FINAL, np.zeros(16, np.float32), lambda *a: None, (2, 10, 259), draft=(1,) * 11)
    j.started, j.finished = 1.0, 1.25
    took = TranscriptResult(
        "Unless to be", [1], -0.2, 0.0, 90.0, 150.0, 5.2, window_s=7.0, draft_tokens=11, draft_accepted=7
    )
    assert decode_line(j, took) == (
        "stream mic: final decode 250 ms (encode 90, decode 150; 5.2 s audio in a 7 s window, "
        "draft 7 of 11 tokens taken)"
    )
    plain = dataclasses.replace(took, draft_tokens=0, draft_accepted=0)
    assert decode_line(j, plain).endswith("in a 7 s window)")
