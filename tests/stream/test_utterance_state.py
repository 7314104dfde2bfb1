"""The utterance's states (stream/utterance_state.py): the transitions the pipeline drives, and the
ones it must never make (a bug there raises at once instead of publishing a final twice)."""

from __future__ import annotations

import numpy as np
import pytest

from voxnode.stream.end_rules import Verdict
from voxnode.stream.endpoint import Completion
from voxnode.stream.jobs import DecodeJob, JobKind
from voxnode.stream.segmenter import Utterance
from voxnode.stream.utterance_state import Phase, TransitionError, UtteranceState

pytestmark = pytest.mark.unit  # make check: needs only the venv (pyproject.toml markers)


def _job(kind: JobKind) -> DecodeJob:
    return DecodeJob("mic", kind, np.zeros(160, dtype=np.float32), lambda *_: None)


def test_a_pause_that_ends_the_utterance_makes_its_speculation_the_final() -> None:
    st = UtteranceState(Utterance(uid=1), 0.0)
    spec = _job(JobKind.SPECULATIVE)
    st.pause(spec)
    assert (st.phase, st.spec_job, st.ended) == (Phase.PAUSED, spec, False)
    st.end(Utterance(uid=1), spec)
    assert (st.phase, st.final_job, st.spec_job, st.ended, st.done) == (Phase.ENDED, spec, spec, True, False)
    st.finish()
    assert st.done


def test_speech_resuming_voids_the_pause_and_its_verdict() -> None:
    st = UtteranceState(Utterance(uid=2), 0.0)
    st.pause(_job(JobKind.SPECULATIVE))
    st.turn_prob, st.verdict = 0.9, Verdict("end_of_turn", Completion.SENTENCE_END, 13)
    st.resume()
    assert (st.phase, st.spec_job, st.turn_prob, st.verdict) == (Phase.OPEN, None, None, None)
    second = _job(JobKind.SPECULATIVE)
    st.pause(second)
    assert (st.spec_job, st.verdict) == (second, None)
    final = _job(JobKind.FINAL)
    st.end(Utterance(uid=2), final, "max_length")  # ended by another rule than this pause
    assert (st.final_job, st.spec_job, st.ended_by) == (final, None, "max_length")


@pytest.mark.parametrize(
    "walk",
    [
        ["resume"],  # speech cannot resume without a pause
        ["finish"],  # no final before the end
        ["end", "pause"],
        ["end", "finish", "finish"],  # a final published twice
        ["end", "finish", "end"],
    ],
)
def test_transitions_the_diagram_lacks_raise(walk: list[str]) -> None:
    st = UtteranceState(Utterance(uid=3), 0.0)
    steps = {
        "pause": lambda: st.pause(_job(JobKind.SPECULATIVE)),
        "resume": st.resume,
        "end": lambda: st.end(Utterance(uid=3), _job(JobKind.FINAL)),
        "finish": st.finish,
    }
    for step in walk[:-1]:
        steps[step]()
    with pytest.raises(TransitionError):
        steps[walk[-1]]()
