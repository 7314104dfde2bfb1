"""The pause's rules (stream/end_rules.py): each one fires on its own evidence, the chain asks them in
the declared order and names the one that decided, and [vad] builds it (stream/params.py)."""

from __future__ import annotations

import dataclasses

import pytest

from voxnode.asr.recognizer import TranscriptResult
from voxnode.config import Config
from voxnode.stream.end_rules import (
    WAIT,
    AgreedEnd,
    ClosingMark,
    EndOfTurn,
    EndRules,
    Hangover,
    OpenEnding,
    PauseEvidence,
    Verdict,
)
from voxnode.stream.endpoint import Completion
from voxnode.stream.params import end_rules, frames

pytestmark = pytest.mark.unit  # make check: needs only the venv (pyproject.toml markers)

CHAIN = end_rules(Config())  # the default: open text, text and model agreed, a sure mark, the model, the hangover
SHORT, LONG, ORDINARY = 12, 50, 35  # vad.*hangover_ms defaults (240, 1000, 700 ms) in 20 ms frames
AGREED = frames(Config().vad.agreed_end_hangover_ms)  # vad.agreed_end_hangover_ms


def vad(**kw) -> Config:
    c = Config()
    return dataclasses.replace(c, vad=dataclasses.replace(c.vad, **kw))


def test_durations_round_up_to_whole_frames():
    """A setting is never shortened: 250 ms waits 13 frames (260 ms). Rounded to nearest (half to even)
    it was 12, and the sentence-end hangover's default 250 ran as 240 ms: the default now says 240."""
    assert [frames(ms) for ms in (1, 20, 21, 240, 241, 250, 260, 270, 700)] == [1, 1, 2, 12, 13, 13, 13, 14, 35]
    assert frames(Config().vad.sentence_end_hangover_ms) == 12  # the default's behaviour is unchanged


def pause(text: str, mark_p: float | None = None, turn: float | None = None, asked: bool = True, **kw) -> PauseEvidence:
    return PauseEvidence(text, kw.get("ended_cleanly", True), mark_p, kw.get("language", ""), asked, turn)


def test_the_default_chain_in_its_declared_order_with_its_settings():
    assert CHAIN.names == ("open_ending", "agreed_end", "closing_mark", "end_of_turn", "hangover")
    v = Config().vad
    assert 0 < AGREED < SHORT  # on by default, and shorter than a sure mark's alone
    assert CHAIN.rules == (
        OpenEnding(LONG),
        AgreedEnd(v.sentence_end_min_prob, v.agreed_end_min_prob, AGREED),
        ClosingMark(v.sentence_end_min_prob, SHORT),
        EndOfTurn(v.end_of_turn_min_prob, SHORT),
    )
    assert CHAIN.last == Hangover(ORDINARY)
    off = end_rules(vad(end_of_turn="off", open_hangover_ms=1500))
    assert off.names == ("open_ending", "closing_mark", "hangover")  # no model: neither of its rules
    assert off.rules[0] == OpenEnding(frames(1500))
    assert end_rules(vad(agreed_end_hangover_ms=0)).names == ("open_ending", "closing_mark", "end_of_turn", "hangover")
    own = end_rules(vad(agreed_end_hangover_ms=170, agreed_end_min_prob=0.7, sentence_end_min_prob=0.6)).rules[1]
    assert own == AgreedEnd(0.6, 0.7, frames(170))


def test_an_agreed_hangover_longer_than_a_sure_marks_is_refused_naming_the_key():
    from voxnode.config.fields import InvalidValue

    with pytest.raises(InvalidValue, match="must not exceed sentence_end_hangover_ms") as e:
        vad(agreed_end_hangover_ms=260).vad.check()
    assert e.value.key == "agreed_end_hangover_ms"
    vad(agreed_end_hangover_ms=240).vad.check()


@pytest.mark.parametrize(
    "evidence, verdict",
    [
        # Each rule fires on its own evidence, and names itself.
        (pause("Set a timer for", turn=0.99), Verdict("open_ending", Completion.OPEN, LONG)),
        (pause("Turn on the lights.", 0.95, turn=0.01), Verdict("closing_mark", Completion.SENTENCE_END, SHORT)),
        (pause("Turn on the lights.", 0.95, turn=0.97), Verdict("agreed_end", Completion.SENTENCE_END, AGREED)),
        # The model's answer not in yet: the sure mark decides alone (no waiting).
        (pause("Turn on the lights.", 0.95, turn=None), Verdict("closing_mark", Completion.SENTENCE_END, SHORT)),
        (pause("ten of clubs", turn=0.95), Verdict("end_of_turn", Completion.SENTENCE_END, SHORT)),
        (pause("ten of clubs", turn=0.5), Verdict("hangover", Completion.UNKNOWN, ORDINARY)),
        # The order: an open ending stays open however sure its full stop and the sound.
        (pause("Set a timer for.", 0.99, turn=0.99), Verdict("open_ending", Completion.OPEN, LONG)),
        # A hesitant full stop is no closing mark: the model decides, with a sure mark's hangover, not the agreed one.
        (pause("Turn on the kitchen.", 0.35, turn=0.99), Verdict("end_of_turn", Completion.SENTENCE_END, SHORT)),
        (pause("ten of clubs", turn=0.99), Verdict("end_of_turn", Completion.SENTENCE_END, SHORT)),
        # The model was not asked (no model running): it has no opinion.
        (pause("ten of clubs", asked=False), Verdict("hangover", Completion.UNKNOWN, ORDINARY)),
        # A decode cut short says nothing about the sentence: the text rules pass.
        (
            pause("Turn on the lights.", 0.95, turn=0.2, ended_cleanly=False),
            Verdict("hangover", Completion.UNKNOWN, ORDINARY),
        ),
        (
            pause("Turn on the lights.", 0.95, turn=0.99, ended_cleanly=False),
            Verdict("end_of_turn", Completion.SENTENCE_END, SHORT),
        ),
        # Another language's open words.
        (pause("Allume la lumière de", turn=0.99, language="fr"), Verdict("open_ending", Completion.OPEN, LONG)),
    ],
)
def test_the_first_rule_that_decides_names_the_verdict(evidence, verdict):
    assert CHAIN.verdict(evidence) == verdict


def test_the_chain_waits_for_the_end_of_turn_model_only_where_the_text_cannot_tell():
    assert CHAIN.verdict(pause("ten of clubs", turn=None)) is None  # asked, not back yet
    (eot,) = [r for r in CHAIN.rules if r.name == "end_of_turn"]
    assert eot.judge(pause("ten of clubs", turn=None)) is WAIT
    # The text decided: the model's answer is not waited for.
    assert CHAIN.verdict(pause("Turn on the lights.", 0.95, turn=None)).rule == "closing_mark"
    assert CHAIN.verdict(pause("and", turn=None)).rule == "open_ending"


def test_rules_pass_on_what_they_do_not_know():
    assert OpenEnding(LONG).judge(pause("Turn on the lights.")) is None
    assert ClosingMark(0.8, SHORT).judge(pause("Turn on the lights.", 0.7)) is None
    assert ClosingMark(0.6, SHORT).judge(pause("Turn on the lights.", 0.7)).rule == "closing_mark"  # its own bar
    assert EndOfTurn(0.9, SHORT).judge(pause("x", turn=0.89)) is None
    assert EndOfTurn(0.9, SHORT).judge(pause("x", turn=0.9)).rule == "end_of_turn"
    agreed = AgreedEnd(0.8, 0.9, AGREED)
    assert agreed.judge(pause("Turn on the lights.", 0.95, turn=None)) is None  # not back: passes, never waits
    assert agreed.judge(pause("Turn on the lights.", 0.95, turn=0.89)) is None  # the model unsure
    assert agreed.judge(pause("Turn on the lights.", 0.79, turn=0.99)) is None  # the text unsure
    assert agreed.judge(pause("ten of clubs", turn=0.99)) is None  # no mark
    assert agreed.judge(pause("Turn on the lights.", 0.8, turn=0.9)) == Verdict(
        "agreed_end", Completion.SENTENCE_END, AGREED
    )
    assert (
        AgreedEnd(0.5, 0.6, 4).judge(pause("Turn on the lights.", 0.55, turn=0.65)).hangover_frames == 4
    )  # its own bars


def test_a_chain_declared_in_another_order_decides_by_it():
    # The sound first: the same pause is now the model's call.
    chain = EndRules((EndOfTurn(0.9, SHORT), OpenEnding(LONG)), Hangover(ORDINARY))
    assert chain.names == ("end_of_turn", "open_ending", "hangover")
    assert chain.verdict(pause("Set a timer for", turn=0.99)).rule == "end_of_turn"
    assert CHAIN.verdict(pause("Set a timer for", turn=0.99)).rule == "open_ending"


def test_evidence_from_a_decode_is_its_text_as_published():
    r = TranscriptResult(
        "Turn on the lights. [BLANK_AUDIO]", [], -0.2, 0.01, 1.0, 1.0, 1.0, "eot", punctuation_prob=0.9
    )
    e = PauseEvidence.of(r, turn_asked=True, turn_prob=0.3)
    assert (e.text, e.ended_cleanly, e.punctuation_prob, e.turn_asked, e.turn_prob) == (
        "Turn on the lights.",
        True,
        0.9,
        True,
        0.3,
    )
    assert CHAIN.verdict(e).rule == "closing_mark"
