"""Sentence-aware endpoints: the verdict on the text, and the segmenter applying it to a pause."""

import dataclasses

import pytest

from tests.stream.scripted import PARAMS, frame
from voxnode.config import Config
from voxnode.stream.endpoint import Completion, judge
from voxnode.stream.segmenter import Ended, Paused, Segmenter, SegmenterParams

pytestmark = pytest.mark.unit  # make check: needs only the venv (pyproject.toml markers)

# Utterances here run past 60 frames: no max-length cut.
P = dataclasses.replace(PARAMS, max_utterance_frames=200, cut_search_frames=50)


@pytest.mark.parametrize(
    "text, verdict",
    [
        ("Turn on the kitchen lights.", Completion.SENTENCE_END),
        ("What time is it?", Completion.SENTENCE_END),
        ("Stop!", Completion.SENTENCE_END),
        ('He said "go."', Completion.SENTENCE_END),
        ("Ask not,", Completion.OPEN),
        ("Set a timer for.", Completion.OPEN),  # Whisper's full stop after a cut-off phrase
        ("Turn on the lights and.", Completion.OPEN),
        ("ten of clubs", Completion.UNKNOWN),  # no closing punctuation: the ordinary hangover
        ("The kitchen lights -", Completion.OPEN),
        ("Well...", Completion.OPEN),
        ("", Completion.UNKNOWN),
    ],
)
def test_verdict_on_text(text, verdict):
    assert judge(text, ended_cleanly=True) == verdict


def test_a_hesitant_closing_mark_gets_the_ordinary_hangover():
    # Whisper writes "Turn on the kitchen." for a fragment too, but gives the full stop a lower probability.
    assert judge("Turn on the kitchen.", ended_cleanly=True, punctuation_prob=0.35) == Completion.UNKNOWN
    assert judge("Turn on the kitchen.", ended_cleanly=True, punctuation_prob=0.85) == Completion.SENTENCE_END
    # The bar is vad.sentence_end_min_prob (default 0.8): 0.7 is hesitant unless the owner lowers it.
    assert judge("Turn on the kitchen.", ended_cleanly=True, punctuation_prob=0.7) == Completion.UNKNOWN
    assert judge("Turn on the kitchen.", True, 0.7, min_prob=0.6) == Completion.SENTENCE_END
    assert Config().vad.sentence_end_min_prob == 0.8
    # A function word at the end stays open however sure the full stop is.
    assert judge("Set a timer for.", ended_cleanly=True, punctuation_prob=0.95) == Completion.OPEN


def test_a_decode_that_did_not_end_cleanly_says_nothing():
    assert judge("Turn on the kitchen lights.", ended_cleanly=False) == Completion.UNKNOWN


def push_all(seg, flags, start=0):
    return [(i, e) for i, f in enumerate(flags, start) for e in seg.push(frame(i, f))]


def test_short_hangover_for_a_finished_sentence_ends_the_pause_at_once():
    seg = Segmenter(P)
    ev = push_all(seg, [0] * 10 + [1] * 12 + [0] * 6)  # 6 frames of silence: past the tail (4)
    pause = [e for _, e in ev if isinstance(e, Paused)][0]
    ended = seg.set_hangover(pause.pause_id, 5)  # the decode is back: a finished sentence
    assert len(ended) == 1 and isinstance(ended[0], Ended) and ended[0].pause_id == pause.pause_id
    assert ended[0].reason == "endpoint" and seg.active is None


def test_long_hangover_for_an_open_sentence_keeps_one_utterance_across_a_pause():
    seg = Segmenter(P)
    ev = push_all(seg, [0] * 10 + [1] * 12 + [0] * 5)
    pause = [e for _, e in ev if isinstance(e, Paused)][0]
    assert seg.set_hangover(pause.pause_id, 20) == []  # "ask not," -> wait up to 20 frames
    ev = push_all(seg, [0] * 10 + [1] * 12 + [0] * 30, start=27)  # 15 silent frames, then speech resumes
    kinds = [type(e).__name__ for _, e in ev]
    assert kinds.count("Ended") == 1 and "Resumed" in kinds
    # After the resume the ordinary hangover (10) applies again.
    end_at = [i for i, e in ev if isinstance(e, Ended)][0]
    last_speech = 27 + 10 + 12 - 1
    assert end_at == last_speech + P.hangover_frames


def test_a_verdict_for_a_pause_that_is_over_is_ignored():
    seg = Segmenter(P)
    ev = push_all(seg, [0] * 10 + [1] * 12 + [0] * 5)
    pause = [e for _, e in ev if isinstance(e, Paused)][0]
    push_all(seg, [1] * 3, start=27)  # speech resumed before the decode came back
    assert seg.set_hangover(pause.pause_id, 1) == []
    assert seg.active is not None


def test_max_length_cut_falls_in_the_longest_pause():
    p = SegmenterParams(
        pre_roll_frames=0,
        onset_frames=1,
        onset_window_frames=1,
        tail_frames=2,
        hangover_frames=10,
        min_speech_frames=2,
        max_utterance_frames=60,
        cut_search_frames=30,
    )
    seg = Segmenter(p)
    # 40 frames of speech, a 6-frame pause (shorter than the hangover), then speech again until the cut.
    flags = [1] * 40 + [0] * 6 + [1] * 30
    ev = push_all(seg, flags)
    cut = [e for _, e in ev if isinstance(e, Ended) and e.reason == "max_length"][0]
    last = cut.utterance.chunks[-1].seq
    assert 40 <= last <= 45  # inside the pause, not in the middle of a word
