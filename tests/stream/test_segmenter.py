"""Segmenter / endpointing: frame-exact behaviour on scripted VAD decisions."""

import dataclasses

import numpy as np
import pytest

from tests.stream.scripted import PARAMS, frame
from voxnode.stream.segmenter import Discarded, Ended, Paused, Segmenter, Started

pytestmark = pytest.mark.unit  # make check: needs only the venv (pyproject.toml markers)

P = PARAMS


def run(flags, params=P, levels=None, sizes=None):
    seg = Segmenter(params)
    events = []
    for i, f in enumerate(flags):
        new = seg.push(frame(i, f, levels[i] if levels is not None else None))
        if sizes is not None:  # utterances keep growing: record their size when announced
            sizes += [(type(e).__name__, len(e.utterance.chunks)) for e in new]
        events += [(i, e) for e in new]
    events += [(len(flags), e) for e in seg.flush()]
    return events


def frames_of(audio):
    return sorted(set(int(v) for v in audio[::320]))


def test_onset_needs_several_speech_frames_and_keeps_pre_roll():
    # Two isolated speech frames (clicks) do not start anything.
    assert run([0] * 20 + [1, 0, 0, 0, 0, 1] + [0] * 20) == []
    ev = run([0] * 20 + [1] * 10 + [0] * 20)
    started = [(i, e) for i, e in ev if isinstance(e, Started)]
    assert len(started) == 1
    i, s = started[0]
    assert i == 22  # third speech frame confirms the onset
    first = s.utterance.chunks[0].seq
    assert first == 22 - (P.pre_roll_frames + P.onset_window_frames) + 1  # pre-roll before the first speech frame
    assert first < 20


def test_endpoint_after_hangover_and_final_audio_is_speech_plus_tail():
    ev = run([0] * 20 + [1] * 10 + [0] * 30)
    ended = [(i, e) for i, e in ev if isinstance(e, Ended)]
    assert len(ended) == 1
    i, e = ended[0]
    assert e.reason == "endpoint"
    assert i == 29 + P.hangover_frames  # last speech frame 29, then hangover frames of silence
    got = frames_of(e.audio)
    assert got[-1] == 29 + P.tail_frames and got[0] == e.utterance.chunks[0].seq
    assert e.utterance.speech_end()[0] == pytest.approx(1000 + 30 * 0.02)


def test_pause_announces_final_audio_and_resume_voids_it():
    flags = [0] * 20 + [1] * 10 + [0] * 6 + [1] * 10 + [0] * 30
    ev = run(flags)
    kinds = [type(e).__name__ for _, e in ev]
    assert kinds == ["Started", "Paused", "Resumed", "Paused", "Ended"]
    paused = [e for _, e in ev if isinstance(e, Paused)]
    end = [e for _, e in ev if isinstance(e, Ended)][0]
    # The endpoint confirms the second pause: identical audio, so a speculative decode of it is the final.
    assert end.pause_id == paused[1].pause_id
    assert np.array_equal(end.audio, paused[1].audio)
    assert end.pause_id != paused[0].pause_id


def test_short_utterance_is_discarded():
    ev = run([0] * 20 + [1] * 4 + [0] * 30)
    kinds = [type(e) for _, e in ev]
    assert Started in kinds and Discarded in kinds and Ended not in kinds
    assert not any(isinstance(e, Paused) for _, e in ev)  # no speculative decode for it either


def test_max_length_cuts_at_quietest_point_and_continues():
    n = 80
    flags = [0] * 10 + [1] * n + [0] * 30
    levels = [-60.0] * 10 + [-20.0] * n + [-60.0] * 30
    # A dip inside the cut-search window of the first 60 frames of the utterance.
    levels[10 + 48] = -45.0
    ev = run(flags, levels=levels)
    ended = [e for _, e in ev if isinstance(e, Ended)]
    assert [e.reason for e in ended] == ["max_length", "endpoint"]
    head, tail = ended
    assert frames_of(head.audio)[-1] == 58  # cut right after the quietest frame
    assert frames_of(tail.audio)[0] == 59
    assert head.utterance.uid != tail.utterance.uid
    # Nothing lost or duplicated at the cut.
    assert frames_of(head.audio) + frames_of(tail.audio) == list(
        range(frames_of(head.audio)[0], 10 + n + P.tail_frames)
    )


def test_flush_finishes_open_utterance():
    ev = run([0] * 10 + [1] * 12)
    assert isinstance(ev[-1][1], Ended) and ev[-1][1].reason == "flush"


def test_invalid_params_rejected():
    with pytest.raises(ValueError):
        dataclasses.replace(P, tail_frames=30, hangover_frames=10)


def test_max_length_cut_never_leaves_an_empty_continuation():
    # Quietest frame is the newest one when the limit hits (a music note decaying, say).
    n = 80
    flags = [0] * 10 + [1] * n + [0] * 30
    levels = [-60.0] * 10 + [-20.0] * n + [-60.0] * 30
    first = 12 - (P.pre_roll_frames + P.onset_window_frames) + 1
    levels[first + P.max_utterance_frames - 1] = -50.0
    sizes = []
    ev = run(flags, levels=levels, sizes=sizes)
    assert all(size >= 1 for kind, size in sizes if kind == "Started"), sizes
    ended = [e for _, e in ev if isinstance(e, Ended)]
    assert [e.reason for e in ended] == ["max_length", "endpoint"]
    assert frames_of(ended[0].audio) + frames_of(ended[1].audio) == list(range(first, 10 + n + P.tail_frames))


def test_frames_after_a_late_end_open_the_next_utterance():
    """A pause's verdict that comes late (the end-of-turn model) ends the utterance after the talker
    went on: the frames after its final's audio, where the VAD had not flagged the next word yet, are the
    next utterance's pre-roll, not lost between the two finals."""
    seg = Segmenter(P)
    events = []
    for i, f in enumerate([0] * 20 + [1] * 10 + [0] * 8):  # last speech 29; the pause announced at 33
        events += seg.push(frame(i, f))
    (paused,) = [e for e in events if isinstance(e, Paused)]
    (ended,) = seg.set_hangover(paused.pause_id, 6)  # 8 silent frames already: it ends now, at frame 37
    assert isinstance(ended, Ended) and frames_of(ended.audio)[-1] == 29 + P.tail_frames
    started = [e for i, f in enumerate([1] * 10, start=38) for e in seg.push(frame(i, f)) if isinstance(e, Started)]
    assert len(started) == 1
    # Frames 34-37 (after the final's audio, before the verdict) lead the next utterance.
    assert [c.seq for c in started[0].utterance.chunks[:4]] == [34, 35, 36, 37]


def test_a_cut_in_a_pause_with_a_longer_hangover_leaves_no_silent_continuation_open():
    """Max length reached in a pause given a longer hangover (mid-sentence): the cut ends the first
    utterance; the silence after the cut is dropped after the usual hangover, and the next words
    open a new utterance by the onset rule, with their pre-roll. (With the pause's longer hangover kept,
    they joined the silent continuation: it began 12 frames before them, and would reach the next max-length
    cut that much sooner.)"""
    flags = [0] * 5 + [1] * 30 + [0] * 27 + [1] * 30 + [0] * 40  # speech 5-34 and 62-91
    seg = Segmenter(P)
    events = []
    for i, f in enumerate(flags):
        new = seg.push(frame(i, f))
        events += new
        for e in new:
            if isinstance(e, Paused) and e.utterance.uid == 0:
                events += seg.set_hangover(e.pause_id, 3 * P.hangover_frames)  # longer, but for this pause
    ended = [e for e in events if isinstance(e, Ended)]
    assert [e.reason for e in ended] == ["max_length", "endpoint"], events
    assert frames_of(ended[0].audio)[-1] < 62
    discarded = [e for e in events if isinstance(e, Discarded)]
    assert [d.reason for d in discarded] == ["too_short"]  # the silent continuation
    second = ended[1].utterance.chunks
    assert second[0].seq == 64 - (P.pre_roll_frames + P.onset_window_frames) + 1  # onset at 64, pre-roll
    assert frames_of(ended[1].audio)[-1] == 91 + P.tail_frames


class CountingSegmenter(Segmenter):
    """The onset test as it was before issue 23: the window counted on every idle frame."""

    def _idle(self, chunk):
        self._history.append(chunk)
        window = list(self._history)[-self.p.onset_window_frames :]
        if sum(c.speech for c in window) < self.p.onset_frames:
            return []
        return self._open()


@pytest.mark.parametrize("seed", range(6))
def test_idle_frames_skip_the_onset_count_with_the_same_events(seed):
    """Segmenter._idle returns at once on a non-speech frame: the same events, frame for frame, as
    counting the window every time, on random speech (bursts, clicks, long talk cut at the maximum
    length, pauses whose hangover the rules shorten or lengthen)."""
    rng = np.random.default_rng(seed)
    flags = []
    while len(flags) < 3000:
        flags += [rng.random() < 0.5] * int(rng.integers(1, 80 if rng.random() < 0.2 else 8))
    params = [
        P,
        dataclasses.replace(P, onset_frames=1, onset_window_frames=1, pre_roll_frames=0),
        dataclasses.replace(P, onset_frames=0),  # every frame opens an utterance: no shortcut
    ]
    for p in params:
        got, want = Segmenter(p), CountingSegmenter(p)
        for i, f in enumerate(flags):
            a, b = got.push(frame(i, f)), want.push(frame(i, f))
            for seg, evs in ((got, a), (want, b)):
                for e in evs:
                    if isinstance(e, Paused) and e.pause_id % 3:
                        evs += seg.set_hangover(e.pause_id, 2 if e.pause_id % 3 == 1 else 30)
            describe = lambda evs: [(type(e).__name__, e.utterance.uid, len(e.utterance.chunks)) for e in evs]  # noqa: E731
            assert describe(a) == describe(b), f"frame {i}"
