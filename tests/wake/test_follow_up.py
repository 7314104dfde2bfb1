"""Follow-up (wake.follow_up_s): after a final, the next utterance is transcribed without the wake
word if it starts within the window; silence through the window closes it.

The spoken words are espeak-ng's; the detector, front-end, gate, segmenter (and in the ALSA test the
recogniser and the daemon) are the real ones.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.stream.test_pipeline_alsa import run_daemon, wer
from tests.wake.test_wake import AFTER, BEFORE, COMMAND, WAKE, _offline, ac, speech
from voxnode.config import parse_config
from voxnode.stream.wake_gate import GateState

pytestmark = pytest.mark.skipif(not ac.have_espeak(), reason="needs espeak-ng and sox (make deps-test)")


def conversation(gap_s: float, late_s: float) -> np.ndarray:
    """The wake word and a command; `gap_s` later a second sentence (no wake word); `late_s` after
    that a third."""
    return np.concatenate(
        [
            ac.silence(0.5),
            speech(WAKE, speed=150),
            ac.silence(0.6),
            speech(COMMAND),
            ac.silence(gap_s),
            speech(AFTER, "en-gb"),
            ac.silence(late_s),
            speech(BEFORE),
            ac.silence(1.0),
        ]
    )


def utterances_decoded(sched) -> list[int]:
    return sorted({j.tag[0] for j in sched.submitted})


@pytest.mark.parametrize(
    ("config", "decoded", "still_open"),
    [
        ("", [0], False),  # off (the default): one wake word, one utterance
        ("follow_up_s = 2.5\n", [0, 1], False),  # the second sentence is a follow-up; the third comes too late
        ("follow_up_s = 8\n", [0, 1, 2], True),  # each follow-up opens the window again (open at the end)
    ],
)
def test_the_window_takes_the_next_utterance_without_the_wake_word_and_ends_on_silence(config, decoded, still_open):
    audio = conversation(gap_s=1.2, late_s=4.0)
    pipeline, sched, events = _offline(audio, "[wake]\nenabled = true\n" + config)
    assert [e.as_dict()["type"] for e in events] == ["wake"]  # one wake word, said once
    assert utterances_decoded(sched) == decoded, [(j.kind, j.tag) for j in sched.submitted]
    state = GateState.LISTENING if still_open else GateState.CLOSED
    assert pipeline.wake.state is state and pipeline.wake.in_follow_up is still_open
    assert pipeline.stats.wake_timeouts == 0  # a follow-up window that ends in silence is no timeout


def test_the_switch_turns_follow_up_on_at_run_time_and_off_closes_an_open_window():
    audio = conversation(gap_s=1.2, late_s=4.0)
    # Off in the config, on by the switch before the audio: the default window (8 s) applies.
    switch_on = lambda p: setattr(p.wake, "follow_up", True)  # noqa: E731
    pipeline, sched, _ = _offline(audio, "[wake]\nenabled = true\n", before=switch_on)
    assert utterances_decoded(sched) == [0, 1, 2]
    # On in the config, turned off while the window is open (right after the first command's end).
    off_at = int((0.5 + 1.3 + 1.9 + 0.9) / 0.02)  # frames: into the gap after the command

    def switch_off(p, k):
        if k == off_at:
            assert p.wake.in_follow_up, "the window should be open here"
            p.wake.follow_up = False

    pipeline, sched, _ = _offline(audio, "[wake]\nenabled = true\nfollow_up_s = 8\n", each=switch_off)
    assert utterances_decoded(sched) == [0]


def test_the_wake_word_said_again_in_the_window_starts_a_fresh_session():
    """'okay nabu, ...' out of habit in a follow-up: a wake event, and the word is not transcribed."""
    audio = np.concatenate(
        [
            ac.silence(0.5),
            speech(WAKE, speed=150),
            ac.silence(0.6),
            speech(COMMAND),
            ac.silence(1.2),
            speech(WAKE, speed=150),
            ac.silence(0.6),
            speech(AFTER, "en-gb"),
            ac.silence(1.0),
        ]
    )
    pipeline, sched, events = _offline(audio, "[wake]\nenabled = true\nfollow_up_s = 3\n")
    assert [e.as_dict()["type"] for e in events] == ["wake", "wake"]
    assert pipeline.stats.discarded >= 1  # the follow-up utterance the word began was dropped
    # Finals: the first command and the sentence after the second word. The follow-up utterance the
    # word began (it paused after the word, so a speculative decode had started) was withdrawn.
    jobs = [(j.kind.name, j.tag[0], j.cancelled) for j in sched.submitted]
    assert sorted({j.tag[0] for j in sched.submitted if j.kind.name == "FINAL"}) == [0, 2], jobs
    assert all(j.cancelled for j in sched.submitted if j.tag[0] == 1), jobs


def test_through_real_alsa_the_follow_up_final_says_so(alsa_dir, engine):
    """The real daemon and recogniser: the command after the wake word is a final with
    follow_up false, the sentence in the window one with follow_up true (both name the word), and
    the sentence after the window ended is never transcribed."""
    audio = conversation(gap_s=1.2, late_s=4.0)
    audio = audio + ac.at_dbfs(ac.noise("pink", len(audio), seed=3), -60)
    config = parse_config("[wake]\nenabled = true\nfollow_up_s = 2.5\n")
    events, stats, _ = run_daemon(alsa_dir, audio, engine, config, all_events=True)
    finals = [e for e in events if e["type"] == "final"]
    assert [e["type"] for e in events if e["type"] == "wake"] == ["wake"]
    assert len(finals) == 2, events
    assert wer(COMMAND, finals[0]["text"]) <= 0.2 and finals[0]["follow_up"] is False, finals
    assert wer(AFTER, finals[1]["text"]) <= 0.25 and finals[1]["follow_up"] is True, finals
    assert all(e["wake_word"] == "okay_nabu" for e in finals)
    assert all("garage" not in e["text"].lower() for e in events if e["type"] != "wake"), events
    assert stats["streams"]["mic"]["follow_ups"] == 1 and stats["streams"]["mic"]["wake_timeouts"] == 0
