"""StreamPipeline's paths frame by frame: pause and resume, discard, promote, a speculative result
ahead of the endpoint, lost and suppressed finals, flush.

Two stand-ins, so that each path is hit exactly: the VAD answers from a script (the real VADs are
tested in tests/frontend), and a fake scheduler records what the pipeline asks of it and lets the
test finish each job when and how it chooses (the real scheduler's order and back-pressure are
tested in test_scheduler.py, the whole chain with the real engine in test_pipeline_alsa.py).
"""

from __future__ import annotations

import dataclasses
import logging

import numpy as np
import pytest

from voxnode.asr.recognizer import TranscriptResult
from voxnode.audio.format import PERIOD_FRAMES, PERIOD_S
from voxnode.config import Config
from voxnode.stream.jobs import DecodeJob, JobKind, JobOutcome
from voxnode.stream.params import frames, pipeline_params
from voxnode.stream.pipeline import StreamPipeline

# Defaults in frames: onset 3 of 5, tail 10, minimum speech 12, pre-roll 15; the endpoint's
# hangovers: ordinary, after a finished sentence, after an open one.
_V = Config().vad
TAIL, HANGOVER = frames(_V.tail_ms), frames(_V.hangover_ms)
SENTENCE_END, OPEN = frames(_V.sentence_end_hangover_ms), frames(_V.open_hangover_ms)
AGREED = frames(_V.agreed_end_hangover_ms)  # a sure mark and a sure end-of-turn model


class ScriptedVad:
    def __init__(self):
        self.script: list[bool] = []

    def is_speech(self, frame, spectrum):
        return self.script.pop(0)

    def rest(self, frame, spectrum):  # a frame the noise gate vetoed: its answer is not asked for
        self.script.pop(0)


class FakeScheduler:
    def __init__(self):
        self.submitted: list[DecodeJob] = []
        self.cancelled: list[DecodeJob] = []
        self.promoted: list[DecodeJob] = []
        self.holds: list[bool] = []

    def submit(self, job):
        self.submitted.append(job)

    def cancel(self, job):  # a queued job: reported back at once, as the real one does
        job.cancelled = True
        self.cancelled.append(job)
        job.on_done(job, JobOutcome.CANCELLED, None)

    def promote(self, job):
        job.kind = JobKind.FINAL
        self.promoted.append(job)
        return True

    def hold_partials(self, stream, hold):
        self.holds.append(hold)

    def finish(self, job, result=None, outcome=JobOutcome.DONE):
        job.started, job.finished = 1.0, 1.2
        job.on_done(job, outcome, result)


class FakeTurn:
    """Stands in for the end-of-turn model's thread (the real one is tested in test_turn.py): records
    the requests and lets the test answer each when it chooses."""

    def __init__(self):
        self.requests: list = []
        self.cancelled: list[str] = []
        self.in_time = True  # what worth_asking says (the real rule: test_turn.py)
        self.budgets: list[float] = []

    def worth_asking(self, budget_s):
        self.budgets.append(budget_s)
        return self.in_time

    def submit(self, request):
        self.requests.append(request)

    def cancel(self, stream):
        self.cancelled.append(stream)

    def answer(self, prob, request=None):
        request = request or self.requests[-1]
        request.on_done(request, prob)


def result(text, no_speech_prob=0.01, confidence=-0.2, stop_reason="eot", punctuation_prob=None) -> TranscriptResult:
    return TranscriptResult(
        text, [], confidence, no_speech_prob, 10.0, 20.0, 1.0, stop_reason, punctuation_prob=punctuation_prob
    )


class Rig:
    def __init__(self, turn: bool = False, keep=None, vad: dict | None = None, **stream):
        cfg = Config()
        cfg = dataclasses.replace(cfg, stream=dataclasses.replace(cfg.stream, **{"partials": False, **stream}))
        # The scripted VAD decides alone (in place of WebRTC's): the noise gate (tested in
        # tests/frontend) would veto it.
        vad = {"noise_gate": False, "engine": "webrtc", **(vad or {})}
        cfg = dataclasses.replace(cfg, vad=dataclasses.replace(cfg.vad, **vad))
        self.sched = FakeScheduler()
        self.events = []
        self.now = 0.0
        self.turn = FakeTurn() if turn else None
        params = dataclasses.replace(pipeline_params(cfg), keep=keep)  # keep: [adapt] (test_keeper.py)
        self.pipeline = StreamPipeline("mic", params, self.sched, self.events.append, lambda: self.now, turn=self.turn)
        self.vad = ScriptedVad()
        self.pipeline.frontend.vad = self.vad
        self.seq = 0
        self.rng = np.random.default_rng(0)

    def feed(self, pattern: str) -> None:
        """'1' a speech frame, '0' a silent one, as the VAD will say; 20 ms each."""
        for c in pattern:
            self.vad.script.append(c == "1")
            samples = self.rng.integers(-300, 300, PERIOD_FRAMES).astype(np.int16)
            t = self.seq * PERIOD_S
            self.now = t + PERIOD_S
            self.pipeline.feed(samples, self.seq, t, 1_700_000_000.0 + t)
            self.seq += 1

    def jobs(self, kind):
        return [j for j in self.sched.submitted if j.kind == kind]

    def finals(self):
        return [e for e in self.events if e.type == "final"]


def test_speech_resuming_in_a_pause_voids_the_speculation_and_the_next_pause_is_promoted():
    r = Rig()
    r.feed("0" * 20 + "1" * 30 + "0" * TAIL)
    (spec,) = r.jobs(JobKind.SPECULATIVE)  # decoded ahead of the endpoint, at the pause
    assert r.sched.holds == [True]  # partials held from the first silent frame of the pause
    r.feed("1" * 10)  # the speaker goes on
    assert r.sched.holds == [True, False]
    assert r.sched.cancelled == [spec] and r.finals() == []
    r.feed("0" * HANGOVER)
    specs = r.jobs(JobKind.SPECULATIVE) + r.jobs(JobKind.FINAL)
    assert len(specs) == 2 and specs[1] is not spec
    assert r.sched.promoted == [specs[1]]  # the endpoint confirmed the second pause: its decode is the final
    r.sched.finish(specs[1], result("turn on the lights"))
    (final,) = r.finals()
    assert final.text == "turn on the lights" and r.pipeline.stats.speculative_hits == 1
    # Latency: from the end of the last speech frame (frame 69) to the moment the result came back.
    assert final.latency_ms == pytest.approx((r.now - (60 + TAIL) * PERIOD_S) * 1e3)
    assert final.latency_ms == pytest.approx(HANGOVER * PERIOD_S * 1e3)  # the hangover, no decode wait


def test_too_little_speech_is_discarded_without_a_decode():
    r = Rig()
    r.feed("0" * 20 + "1" * 5 + "0" * HANGOVER)
    assert r.sched.submitted == [] and r.events == []
    assert r.pipeline.stats.discarded == 1 and r.pipeline.idle


def test_a_quick_decode_of_a_finished_sentence_waits_for_the_sentence_end_hangover():
    r = Rig()
    r.feed("0" * 20 + "1" * 30 + "0" * TAIL)
    (spec,) = r.jobs(JobKind.SPECULATIVE)
    r.sched.finish(spec, result("Open the garage door."))  # back at once
    assert r.finals() == [] and not r.pipeline.idle  # a pause this short may still be mid-sentence
    r.feed("0" * (SENTENCE_END - TAIL - 1))
    assert r.finals() == []
    r.feed("0")
    (final,) = r.finals()
    assert final.latency_ms == pytest.approx(SENTENCE_END * PERIOD_S * 1e3)
    assert r.pipeline.stats.endpoints_sentence_end == 1 and len(r.sched.submitted) == 1


def test_a_finished_sentence_is_published_as_soon_as_its_decode_is_back():
    assert SENTENCE_END > TAIL + 2  # the defaults: the decode starts at the tail, the sentence ends later
    r = Rig()
    r.feed("0" * 20 + "1" * 30 + "0" * TAIL)
    (spec,) = r.jobs(JobKind.SPECULATIVE)
    r.feed("0" * (SENTENCE_END - TAIL + 2))  # the decode takes longer than the sentence-end hangover
    r.sched.finish(spec, result("Open the garage door."))
    # Silence has already lasted the sentence-end hangover: the final goes out with the result,
    # not at the ordinary hangover.
    (final,) = r.finals()
    assert final.text == "Open the garage door." and r.pipeline.idle
    assert final.latency_ms == pytest.approx((SENTENCE_END + 2) * PERIOD_S * 1e3)
    assert r.pipeline.stats.endpoints_sentence_end == 1 and len(r.sched.submitted) == 1  # no second decode


def test_an_open_sentence_waits_the_long_hangover_and_keeps_the_pause_inside_one_final():
    r = Rig()
    r.feed("0" * 20 + "1" * 30 + "0" * TAIL)
    (spec,) = r.jobs(JobKind.SPECULATIVE)
    r.sched.finish(spec, result("Set a timer for"))  # more is coming
    r.feed("0" * (HANGOVER - TAIL))
    assert r.finals() == [] and not r.pipeline.idle  # the ordinary hangover no longer ends it
    r.feed("0" * 5 + "1" * 20 + "0" * TAIL)  # a pause past the ordinary hangover, then the rest of the sentence
    (spec2,) = [j for j in r.jobs(JobKind.SPECULATIVE) if j is not spec]
    r.sched.finish(spec2, result("Set a timer for ten minutes."))
    r.feed("0" * (SENTENCE_END - TAIL))
    assert [e.text for e in r.finals()] == ["Set a timer for ten minutes."]
    assert r.pipeline.stats.endpoints_open == 1 and r.pipeline.stats.endpoints_sentence_end == 1


def test_an_open_sentence_still_ends_after_the_long_hangover():
    r = Rig()
    r.feed("0" * 20 + "1" * 30 + "0" * TAIL)
    (spec,) = r.jobs(JobKind.SPECULATIVE)
    r.sched.finish(spec, result("open the garage door and"))  # a trailing "and": open
    r.feed("0" * (OPEN - TAIL - 1))
    assert r.finals() == []
    r.feed("0")
    assert [e.text for e in r.finals()] == ["open the garage door and"]
    assert r.sched.promoted == [] and len(r.sched.submitted) == 1  # the speculation is the final


def test_no_closing_mark_keeps_the_ordinary_hangover():
    r = Rig()
    r.feed("0" * 20 + "1" * 30 + "0" * TAIL)
    (spec,) = r.jobs(JobKind.SPECULATIVE)
    r.sched.finish(spec, result("open the garage door"))  # a command or a fragment: text cannot tell
    r.feed("0" * (HANGOVER - TAIL - 1))
    assert r.finals() == []
    r.feed("0")
    assert [e.text for e in r.finals()] == ["open the garage door"]
    assert r.pipeline.stats.endpoints_open == r.pipeline.stats.endpoints_sentence_end == 0


def test_no_closing_mark_but_a_sure_end_of_turn_gets_the_sentence_end_hangover():
    r = Rig(turn=True)
    r.feed("0" * 20 + "1" * 30 + "0" * TAIL)
    (spec,) = r.jobs(JobKind.SPECULATIVE)
    (req,) = r.turn.requests
    assert req.audio is spec.audio  # the model hears what the decode hears
    r.turn.answer(0.97)  # back before the decode, as usual: nothing to decide yet
    assert r.pipeline.stats.endpoints_sentence_end == 0
    r.sched.finish(spec, result("ten of clubs"))  # no mark: the text alone cannot tell
    r.feed("0" * (SENTENCE_END - TAIL - 1))
    assert r.finals() == []
    r.feed("0")
    assert [e.text for e in r.finals()] == ["ten of clubs"]
    st = r.pipeline.stats
    assert st.endpoints_sentence_end == 1 and st.endpoints_by_turn == 1


def test_a_model_whose_answers_come_too_late_is_not_asked_and_the_text_decides_alone():
    """Where the end-of-turn model answers after the pause's ordinary hangover (a Pi 4), the pause does
    not ask it: the rules decide as with the model off, and nothing waits for an answer."""
    r = Rig(turn=True)
    r.turn.in_time = False
    r.feed("0" * 20 + "1" * 30 + "0" * TAIL)
    assert r.turn.requests == [] and r.turn.budgets == [pytest.approx((HANGOVER - TAIL) * PERIOD_S)]
    r.sched.finish(r.jobs(JobKind.SPECULATIVE)[0], result("ten of clubs"))  # no mark
    r.feed("0" * (HANGOVER - TAIL - 1))
    assert r.finals() == []
    r.feed("0")
    assert [e.text for e in r.finals()] == ["ten of clubs"] and r.pipeline.stats.endpoints_by_turn == 0
    # A sure closing mark still ends its sentence on the sentence-end hangover.
    r2 = Rig(turn=True)
    r2.turn.in_time = False
    r2.feed("0" * 20 + "1" * 30 + "0" * TAIL)
    r2.sched.finish(r2.jobs(JobKind.SPECULATIVE)[0], result("Open the garage door.", punctuation_prob=0.95))
    r2.feed("0" * (SENTENCE_END - TAIL))
    assert [e.text for e in r2.finals()] == ["Open the garage door."] and r2.turn.requests == []


def test_a_late_end_of_turn_verdict_ends_a_pause_that_already_lasted_long_enough():
    r = Rig(turn=True)
    r.feed("0" * 20 + "1" * 30 + "0" * TAIL)
    (spec,) = r.jobs(JobKind.SPECULATIVE)
    r.sched.finish(spec, result("Turn on the kitchen.", punctuation_prob=0.6))  # hesitant: waits for the model
    r.feed("0" * (SENTENCE_END - TAIL + 3))
    assert r.finals() == [] and r.pipeline.stats.endpoints_sentence_end == 0
    r.turn.answer(0.93)  # the pause is already past the sentence-end hangover: final at once
    assert [e.text for e in r.finals()] == ["Turn on the kitchen."]


def test_an_unsure_end_of_turn_keeps_the_ordinary_hangover_and_open_text_stays_open():
    r = Rig(turn=True)
    r.feed("0" * 20 + "1" * 30 + "0" * TAIL)
    r.turn.answer(0.5)
    r.sched.finish(r.jobs(JobKind.SPECULATIVE)[0], result("open the garage door"))
    r.feed("0" * (HANGOVER - TAIL - 1))
    assert r.finals() == []
    r.feed("0")
    assert [e.text for e in r.finals()] == ["open the garage door"]
    # "... and": the text is clearly open, and a confident model does not override it.
    r2 = Rig(turn=True)
    r2.feed("0" * 20 + "1" * 30 + "0" * TAIL)
    r2.turn.answer(0.99)
    r2.sched.finish(r2.jobs(JobKind.SPECULATIVE)[0], result("open the garage door and"))
    r2.feed("0" * (HANGOVER - TAIL + 2))
    assert r2.finals() == [] and r2.pipeline.stats.endpoints_open == 1


def test_a_sure_mark_the_model_agrees_with_ends_the_pause_sooner():
    assert TAIL < AGREED < SENTENCE_END
    r = Rig(turn=True)
    r.feed("0" * 20 + "1" * 30 + "0" * TAIL)
    (spec,) = r.jobs(JobKind.SPECULATIVE)
    r.turn.answer(0.97)  # back first, as usual
    r.sched.finish(spec, result("Open the garage door.", punctuation_prob=0.95))
    r.feed("0" * (AGREED - TAIL - 1))
    assert r.finals() == []
    r.feed("0")
    (final,) = r.finals()
    assert final.latency_ms == pytest.approx(AGREED * PERIOD_S * 1e3)
    st = r.pipeline.stats
    assert (st.endpoints_sentence_end, st.endpoints_agreed, st.endpoints_by_turn) == (1, 1, 0)


def test_the_models_answer_after_a_sure_mark_shortens_the_pause_or_ends_it_at_once():
    r = Rig(turn=True)
    r.feed("0" * 20 + "1" * 30 + "0" * TAIL)
    (spec,) = r.jobs(JobKind.SPECULATIVE)
    r.sched.finish(spec, result("Open the garage door.", punctuation_prob=0.95))  # the mark decides meanwhile
    r.feed("0" * (AGREED - TAIL + 2))
    assert r.finals() == [] and r.pipeline.stats.endpoints_sentence_end == 1
    r.turn.answer(0.97)  # the pause already lasted the agreed hangover: final now
    (final,) = r.finals()
    assert final.latency_ms == pytest.approx((AGREED + 2) * PERIOD_S * 1e3)
    st = r.pipeline.stats
    assert (st.endpoints_sentence_end, st.endpoints_agreed) == (1, 1)  # counted once, by the rule that ended it
    # An unsure answer changes nothing: the sure mark's hangover stands.
    r2 = Rig(turn=True)
    r2.feed("0" * 20 + "1" * 30 + "0" * TAIL)
    r2.sched.finish(r2.jobs(JobKind.SPECULATIVE)[0], result("Open the garage door.", punctuation_prob=0.95))
    r2.feed("0" * (AGREED - TAIL + 2))
    r2.turn.answer(0.5)
    r2.feed("0" * (SENTENCE_END - AGREED - 3))
    assert r2.finals() == []
    r2.feed("0")
    assert len(r2.finals()) == 1 and r2.pipeline.stats.endpoints_agreed == 0


def test_speech_resuming_withdraws_the_question_and_a_late_answer_is_ignored():
    r = Rig(turn=True)
    r.feed("0" * 20 + "1" * 30 + "0" * TAIL)
    first = r.turn.requests[-1]
    r.feed("1" * 10)  # the speaker goes on
    assert r.turn.cancelled == ["mic"]
    r.turn.answer(0.99, first)  # the first pause's answer arrives after all
    r.feed("0" * TAIL)
    spec = r.jobs(JobKind.SPECULATIVE)[-1]
    r.sched.finish(spec, result("open the garage door"))
    r.feed("0" * (SENTENCE_END - TAIL + 2))
    assert r.finals() == []  # not ended on the first pause's verdict
    r.turn.answer(0.2)
    r.feed("0" * (HANGOVER - SENTENCE_END))
    assert [e.text for e in r.finals()] == ["open the garage door"]


def test_a_decode_that_did_not_end_cleanly_keeps_the_ordinary_hangover():
    r = Rig()
    r.feed("0" * 20 + "1" * 30 + "0" * TAIL)
    (spec,) = r.jobs(JobKind.SPECULATIVE)
    r.sched.finish(spec, result("Turn on the lights.", stop_reason="token_cap"))
    assert r.finals() == []
    r.feed("0" * (HANGOVER - TAIL))
    assert [e.text for e in r.finals()] == ["Turn on the lights."]


def test_a_failed_speculation_gets_a_fresh_final_at_the_endpoint():
    r = Rig()
    r.feed("0" * 20 + "1" * 30 + "0" * TAIL)
    (spec,) = r.jobs(JobKind.SPECULATIVE)
    r.sched.finish(spec, RuntimeError("engine hiccup"), JobOutcome.FAILED)
    r.feed("0" * (HANGOVER - TAIL))
    (final_job,) = r.jobs(JobKind.FINAL)
    assert final_job is not spec and r.sched.promoted == []
    r.sched.finish(final_job, result("play some music"))
    assert [e.text for e in r.finals()] == ["play some music"]


def test_a_lost_final_is_counted_and_logged_not_published(caplog):
    r = Rig()
    r.feed("0" * 20 + "1" * 30 + "0" * HANGOVER)
    (final_job,) = r.sched.promoted
    with caplog.at_level(logging.ERROR, logger="voxnode.stream.pipeline"):
        r.sched.finish(final_job, None, JobOutcome.DROPPED)
    assert r.finals() == [] and r.pipeline.stats.finals_lost == 1
    assert "stream mic: final for utterance 0 lost (dropped)" in caplog.text


def test_noise_and_unsure_results_are_suppressed():
    for res in (
        result("thank you", no_speech_prob=0.9, confidence=-1.2),  # Whisper's rule: no speech and unsure
        result("uh", confidence=-3.0),  # below stream.min_confidence
        result("[BLANK_AUDIO]"),
    ):
        r = Rig()
        r.feed("0" * 20 + "1" * 30 + "0" * HANGOVER)
        r.sched.finish(r.sched.promoted[0], res)
        assert r.finals() == [] and r.pipeline.stats.suppressed == 1, res


def test_a_sure_sentence_is_kept_whatever_the_no_speech_probability():
    # Measured live under babble: correct sentences at mean log-probability -0.17 with no-speech
    # probability 0.64 were dropped while the no-speech probability alone decided.
    r = Rig()
    r.feed("0" * 20 + "1" * 30 + "0" * HANGOVER)
    r.sched.finish(r.sched.promoted[0], result("Please hold while I try that extension.", 0.64, -0.17))
    assert [e.text for e in r.finals()] == ["Please hold while I try that extension."]
    assert r.pipeline.stats.suppressed == 0


def test_flush_ends_the_open_utterance_with_a_final():
    r = Rig()
    r.feed("0" * 20 + "1" * 30 + "0" * TAIL)
    (spec,) = r.jobs(JobKind.SPECULATIVE)
    r.feed("1" * 5)  # speech again: the speculation no longer covers the utterance
    r.pipeline.flush()  # end of the file
    (final_job,) = r.jobs(JobKind.FINAL)
    assert spec in r.sched.cancelled
    r.sched.finish(final_job, result("set a timer"))
    assert [e.text for e in r.finals()] == ["set a timer"] and r.pipeline.idle


@pytest.mark.parametrize(
    "text, turn, ended_by, completion",
    [
        ("Open the garage door.", None, "closing_mark", "sentence_end"),  # the text decides: no waiting for the model
        ("Open the garage door.", 0.97, "agreed_end", "sentence_end"),
        ("open the garage door and", 0.99, "open_ending", "open"),
        ("ten of clubs", 0.97, "end_of_turn", "sentence_end"),
        ("ten of clubs", 0.2, "hangover", "unknown"),
    ],
)
def test_the_rule_that_ended_the_utterance_is_named_in_the_debug_log(caplog, text, turn, ended_by, completion):
    r = Rig(turn=True)
    with caplog.at_level(logging.DEBUG, logger="voxnode.stream.pipeline"):
        r.feed("0" * 20 + "1" * 30 + "0" * TAIL)
        (spec,) = r.jobs(JobKind.SPECULATIVE)
        if turn is not None:
            r.turn.answer(turn)
        r.sched.finish(spec, result(text, punctuation_prob=0.95))
        r.feed("0" * OPEN)
    assert [e.text for e in r.finals()] == [text]
    assert f"stream mic: pause 0: {completion}, hangover " in caplog.text and f"({ended_by}; stop eot" in caplog.text
    assert f"stream mic: final 0 ended by {ended_by}, " in caplog.text


def test_an_utterance_the_segmenter_ended_is_named_by_its_reason(caplog):
    r = Rig()
    with caplog.at_level(logging.DEBUG, logger="voxnode.stream.pipeline"):
        r.feed("0" * 20 + "1" * 30)
        r.pipeline.flush()  # end of the file
        (final_job,) = r.jobs(JobKind.FINAL)
        r.sched.finish(final_job, result("set a timer"))
    assert "stream mic: final 0 ended by flush, final" in caplog.text


def test_partials_grow_as_hypotheses_agree_and_the_one_in_flight_is_withdrawn_at_the_end():
    r = Rig(partials=True)
    r.feed("0" * 20 + "1" * 40)  # 0.8 s of audio and 0.5 s since the start: a partial is due
    (p1,) = r.jobs(JobKind.PARTIAL)
    r.sched.finish(p1, result("turn on the kitchen"))
    r.feed("1" * 25)
    p2 = r.jobs(JobKind.PARTIAL)[-1]
    r.sched.finish(p2, result("turn on the kitchen lights"))
    partials = [e for e in r.events if e.type == "partial"]
    # The last word of a hypothesis may be cut: only what two hypotheses agree on is shown.
    assert [p.text for p in partials] == ["turn on the"]
    r.feed("1" * 25)
    p3 = r.jobs(JobKind.PARTIAL)[-1]
    assert not p3.finished
    r.pipeline.flush()
    assert p3 in r.sched.cancelled  # the utterance ended: its pending partial is withdrawn


def test_each_decode_gets_the_utterances_latest_hypothesis_as_its_draft():
    r = Rig(partials=True, partial_max_share=1.0)
    r.feed("0" * 20 + "1" * 40)
    (p1,) = r.jobs(JobKind.PARTIAL)
    assert p1.draft == ()  # nothing decoded yet
    r.sched.finish(p1, dataclasses.replace(result("turn on the"), tokens=[1, 2, 3]))
    r.feed("1" * 25)
    p2 = r.jobs(JobKind.PARTIAL)[-1]
    assert p2.draft == (1, 2, 3)
    r.sched.finish(p2, dataclasses.replace(result(""), tokens=[]))  # heard nothing: the draft stays
    r.feed("1" * 25)
    p3 = r.jobs(JobKind.PARTIAL)[-1]
    assert p3.draft == (1, 2, 3)
    r.sched.finish(p3, dataclasses.replace(result("turn on the lights"), tokens=[1, 2, 3, 4]))
    r.feed("0" * TAIL)
    (spec,) = r.jobs(JobKind.SPECULATIVE)
    assert spec.draft == (1, 2, 3, 4)  # the pause's decode, the final to be, starts from the last partial
    spoken = dataclasses.replace(
        result("turn on the lights,"), tokens=[1, 2, 3, 4, 5], draft_tokens=4, draft_accepted=3
    )
    r.sched.finish(spec, spoken)
    r.feed("1" * 10 + "0" * TAIL)  # speech resumed: the next pause's decode starts from the voided one
    assert r.jobs(JobKind.SPECULATIVE)[-1].draft == (1, 2, 3, 4, 5)
    st = r.pipeline.stats
    assert (st.draft_tokens, st.draft_accepted) == (4, 3)  # counted per stream (health, metrics)


def test_partials_are_spaced_by_their_own_decode_time_on_a_slow_board():
    r = Rig(partials=True)  # partial_interval_ms 500, partial_max_share 0.25

    def frames_to_next_partial(limit=100):
        before = len(r.jobs(JobKind.PARTIAL))
        for n in range(1, limit):
            r.feed("1")
            if len(r.jobs(JobKind.PARTIAL)) > before:
                return n, r.jobs(JobKind.PARTIAL)[-1]
        raise AssertionError("no partial")

    r.feed("0" * 20)
    _, p1 = frames_to_next_partial()
    n, p2 = frames_to_next_partial()
    assert n in (25, 26)  # 500 ms (+ a frame of float rounding)
    r.sched.finish(p2, result("turn on the"))  # took 0.2 s of the engine: the next waits 0.8 s
    n, p3 = frames_to_next_partial()
    assert n in (40, 41)  # 800 ms after p2's submission
    p3.started, p3.finished = 1.0, 1.05
    p3.on_done(p3, JobOutcome.DONE, result("turn on the kitchen"))  # 50 ms: the interval rules again
    n, _ = frames_to_next_partial()
    assert n in (25, 26)
