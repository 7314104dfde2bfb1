"""The pause's speculative decode started early (`vad.speculate_ms`, issue 23): it runs from the first
silent frames after speech; the pause at tail_ms adopts it when no speech came between, speech
resuming gives it up. Frame by frame with the scripted VAD and the recording scheduler of
test_pipeline_paths.py (stand-ins said there); the real chain runs in test_pipeline_alsa.py."""

from __future__ import annotations

import pytest

from voxnode.audio.format import PERIOD_FRAMES, PERIOD_S
from voxnode.config.loader import parse_config
from voxnode.errors import ConfigError
from voxnode.stream.jobs import JobKind, JobOutcome

from .test_pipeline_paths import SENTENCE_END, TAIL, Rig, result

EARLY = 2  # frames: 40 ms into the silence
assert EARLY < TAIL


def early_rig(**kw) -> Rig:
    return Rig(vad={"speculate_ms": EARLY * 20}, **kw)


def test_the_decode_starts_early_and_the_pause_adopts_it_with_its_result():
    r = early_rig(turn=True)
    r.feed("0" * 20 + "1" * 30 + "0" * EARLY)
    (spec,) = r.jobs(JobKind.SPECULATIVE)  # started before the pause
    # The speech so far and EARLY silent frames, nothing after (the pre-roll starts 3 frames early).
    assert spec.audio.size == (len(r.pipeline.segmenter.active.chunks)) * PERIOD_FRAMES
    assert r.pipeline.segmenter.active.last_speech + 1 + EARLY == len(r.pipeline.segmenter.active.chunks)
    r.sched.finish(spec, result("Open the garage door.", punctuation_prob=0.95))  # back before the pause
    assert r.finals() == [] and r.turn.requests == []  # a pause not yet: nothing judged
    r.feed("0" * (TAIL - EARLY))
    assert r.jobs(JobKind.SPECULATIVE) == [spec]  # adopted: no second decode
    (request,) = r.turn.requests  # the end-of-turn model hears the pause's audio, tail included
    assert request.audio.size == spec.audio.size + (TAIL - EARLY) * PERIOD_FRAMES
    r.feed("0" * (SENTENCE_END - TAIL))
    (final,) = r.finals()
    assert final.text == "Open the garage door."
    assert final.latency_ms == pytest.approx(SENTENCE_END * PERIOD_S * 1e3)
    assert r.pipeline.stats.speculative_hits == 1 and len(r.sched.submitted) == 1


def test_a_result_back_after_the_pause_is_the_pauses():
    r = early_rig()
    r.feed("0" * 20 + "1" * 30 + "0" * TAIL)
    (spec,) = r.jobs(JobKind.SPECULATIVE)
    r.feed("0" * (SENTENCE_END - TAIL + 3))  # the decode outlasts the sentence-end hangover
    r.sched.finish(spec, result("Open the garage door.", punctuation_prob=0.95))
    (final,) = r.finals()
    assert final.text == "Open the garage door." and r.pipeline.idle


def test_speech_before_the_pause_gives_the_early_decode_up_and_the_next_silence_starts_another():
    r = early_rig()
    r.feed("0" * 20 + "1" * 30 + "0" * EARLY)
    (first,) = r.jobs(JobKind.SPECULATIVE)
    r.feed("1" * 10)  # the speaker goes on: still decoding, it is given up
    assert r.sched.cancelled == [first]
    r.feed("0" * EARLY)
    (_, done_early) = r.jobs(JobKind.SPECULATIVE)
    r.sched.finish(done_early, result("Open the"))
    r.feed("1" * 10)  # already back: its result is dropped, not the next pause's
    r.feed("0" * TAIL)
    second = r.jobs(JobKind.SPECULATIVE)[-1]
    assert len(r.jobs(JobKind.SPECULATIVE)) == 3 and second.audio.size > done_early.audio.size
    assert second.draft == ()  # result() has no tokens: the draft stays as it was
    r.sched.finish(second, result("Open the garage door.", punctuation_prob=0.95))
    r.feed("0" * (SENTENCE_END - TAIL))
    assert [e.text for e in r.finals()] == ["Open the garage door."]


def test_a_failed_early_decode_gets_a_fresh_one_at_the_pause():
    r = early_rig()
    r.feed("0" * 20 + "1" * 30 + "0" * EARLY)
    (early,) = r.jobs(JobKind.SPECULATIVE)
    r.sched.finish(early, RuntimeError("engine"), JobOutcome.FAILED)
    r.feed("0" * (TAIL - EARLY))
    spec = r.jobs(JobKind.SPECULATIVE)[-1]
    assert spec is not early and spec.tag[1] == 0


def test_an_utterance_discarded_or_cut_withdraws_its_early_decode():
    r = early_rig()
    r.feed("0" * 20 + "1" * 15 + "0" * EARLY)  # 15 frames: enough speech to decode
    (early,) = r.jobs(JobKind.SPECULATIVE)
    r.pipeline.flush()  # the stream ends: a final of everything, not the pause's decode
    assert early in r.sched.cancelled
    assert r.jobs(JobKind.FINAL)


@pytest.mark.parametrize("speculate_ms", [0, TAIL * 20])  # 0, the default: at tail_ms
def test_speculate_ms_off_or_equal_to_the_tail_decodes_at_the_pause_only(speculate_ms):
    r = Rig(vad={"speculate_ms": speculate_ms})
    r.feed("0" * 20 + "1" * 30 + "0" * (TAIL - 1))
    assert r.jobs(JobKind.SPECULATIVE) == []
    r.feed("0")
    (spec,) = r.jobs(JobKind.SPECULATIVE)
    assert spec.tag[1] == 0  # the pause's own, as before issue 23


def test_speculate_ms_may_not_exceed_the_tail():
    with pytest.raises(ConfigError, match=r"vad\.speculate_ms.*tail_ms"):
        parse_config("[vad]\ntail_ms = 100\nspeculate_ms = 120\n")
