"""Who gives the engine up for a waiting final (stream/policy.py `give_way`), on its own: the
scheduler's threads around it are tested in test_scheduler.py."""

from __future__ import annotations

import numpy as np
import pytest

from voxnode.stream.jobs import DecodeJob, JobKind
from voxnode.stream.policy import MAX_YIELDS, give_way

pytestmark = pytest.mark.unit  # make check: needs only the venv (pyproject.toml markers)


def job(stream: str, kind: JobKind, started: float = 0.0, background: bool = False) -> DecodeJob:
    j = DecodeJob(stream, kind, np.zeros(160, np.float32), lambda *_: None, background=background)
    j.started = started
    return j


def test_a_partial_in_the_way_gives_way_the_oldest_first_and_only_with_no_worker_free():
    a, b = job("a", JobKind.PARTIAL, 1.0), job("b", JobKind.PARTIAL, 2.0)
    running = {"a": a, "b": b}
    final = job("c", JobKind.FINAL)
    assert give_way(running, 1, [[final], []]) == []  # a worker is free: it takes the final
    assert give_way(running, 0, [[final], []]) == [a]
    spec = job("d", JobKind.SPECULATIVE)
    assert give_way(running, 0, [[final], [spec]]) == [a, b]  # finals first, then speculative finals
    a.abandon.set()
    assert give_way(running, 0, [[final], []]) == [b]  # already giving way: not counted twice


def test_a_streams_own_partial_always_gives_way_and_nothing_else_of_its_own():
    own = job("a", JobKind.PARTIAL)
    assert give_way({"a": own}, 3, [[job("a", JobKind.FINAL)], []]) == [own]
    spec = job("a", JobKind.SPECULATIVE)
    assert give_way({"a": spec}, 0, [[job("a", JobKind.FINAL)], []]) == []  # it is a final-to-be


def test_a_background_piece_gives_way_to_a_microphone_only_and_at_most_max_yields_times():
    piece = job("wyoming:1", JobKind.FINAL, background=True)
    mic = job("mic", JobKind.FINAL)
    assert give_way({"wyoming:1": piece}, 0, [[mic], []]) == [piece]
    assert give_way({"wyoming:1": piece}, 0, [[job("wyoming:2", JobKind.FINAL, background=True)], []]) == []
    piece.yields = MAX_YIELDS
    assert give_way({"wyoming:1": piece}, 0, [[mic], []]) == []  # it has yielded enough: it runs to its end
    # A partial goes before a piece.
    partial = job("kitchen", JobKind.PARTIAL, 5.0)
    piece.yields = 0
    assert give_way({"wyoming:1": piece, "kitchen": partial}, 0, [[mic], []]) == [partial]
