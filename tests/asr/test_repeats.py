"""Whole-utterance repeats (issue 27, item 7): a short command must come out once, live and offline,
and a real repetition ("five five", a command said twice) must stay as said.

Real speech: the Asterisk prompts (asterisk-core-sounds-en-wav, Makefile APT_TEST) and
pocketsphinx-testdata."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from voxnode.asr.whisper import guards, redecode
from voxnode.asr.whisper.search import Decoded
from voxnode.audio.wavfile import read_audio

from .conftest import POCKETSPHINX

ASTERISK = Path("/usr/share/asterisk/sounds/en")
RATE = 16000


def prompt_audio(name: str) -> np.ndarray:
    path = ASTERISK / f"{name}.wav"
    if not path.exists():
        pytest.skip("asterisk-core-sounds-en-wav is not installed")
    return read_audio(path)


def decoded(engine, text: str, eot: bool = True) -> Decoded:
    tokens = engine._tokenizer.encode(" " + text)
    return Decoded(tokens, [-0.1] * (len(tokens) + eot), 0.01, "eot" if eot else "token_cap")


def test_a_whole_utterance_repeat_is_told_from_a_real_repetition():
    assert guards.repeat_unit("Set bedroom light green. Set bedroom light green.") == (4, 2)
    assert guards.is_repeated_utterance("Set bedroom light green. Set bedroom light green.")
    assert guards.is_repeated_utterance("five, five, five")
    assert guards.is_repeated_utterance("telephone number. telephone number")  # the last mark missing
    assert guards.is_repeated_utterance("Press zero for mailbox options. Press zero for mail box options.")
    assert not guards.is_repeated_utterance("five five")  # one word twice: speech
    assert not guards.is_repeated_utterance("5 5")
    assert not guards.is_repeated_utterance("Set bedroom light green.")
    assert not guards.is_repeated_utterance("He said that that was that.")
    assert not guards.is_repeated_utterance("Set bedroom light green. Set bedroom light")  # not whole copies
    assert guards.spoken_letters("Press 5.") == 5 + guards.DIGIT_LETTERS


def test_speech_span_is_the_speech_not_the_padding():
    audio = prompt_audio("vm-deleted")  # "Message deleted.", 1.39 s
    span = guards.speech_span_s(audio)
    assert 0.9 < span < 1.39
    padded = np.concatenate([np.zeros(RATE, np.float32), audio, np.zeros(2 * RATE, np.float32)])
    assert guards.speech_span_s(padded) == pytest.approx(span, abs=0.041)
    # Noise can only lengthen the span (a repeat is then cut less readily, never more).
    noisy = padded + np.random.default_rng(0).normal(0, 0.003, len(padded)).astype(np.float32)
    assert guards.speech_span_s(noisy) >= span


def test_a_repeat_longer_than_its_speech_is_cut_to_one_copy(engine):
    text_of = engine._tokenizer.decode
    command = prompt_audio("vm-deleted")  # 1.2 s of speech: room for one short command, not two
    twice = decoded(engine, "Set bedroom light green. Set bedroom light green.")
    out = redecode.collapse(twice, text_of, command)
    assert text_of(out.tokens) == "Set bedroom light green."
    assert out.stop_reason == "eot" and len(out.logprobs) == len(out.tokens) + 1  # the end-of-text kept
    thrice = decoded(engine, "less than. less than. less than.")
    assert text_of(redecode.collapse(thrice, text_of, command).tokens) == "less than."
    # The last copy without its mark, and a decode that hit the token cap (no end-of-text logprob).
    capped = decoded(engine, "telephone number. telephone number", eot=False)
    out = redecode.collapse(capped, text_of, command)
    assert text_of(out.tokens) == "telephone number." and len(out.logprobs) == len(out.tokens)


def test_a_real_repetition_is_kept(engine):
    text_of = engine._tokenizer.decode
    five = read_audio(POCKETSPHINX / "cards" / "004.wav")  # "five five", 1.1 s of speech
    for text in ("five five", "5 5", "five, five, five", "no, no, no"):
        d = decoded(engine, text)
        assert redecode.collapse(d, text_of, five) is d, text
    # A command said twice takes twice the time: both copies stay.
    command = prompt_audio("vm-deleted")
    said_twice = np.concatenate([command, np.zeros(RATE // 2, np.float32), command])
    d = decoded(engine, "Message deleted. Message deleted.")
    assert redecode.collapse(d, text_of, said_twice) is d


def test_a_drafted_final_says_a_short_command_once(engine):
    """The live final's call: the utterance's audio with the latest partial's tokens as the draft
    (DecodeScheduler hands them so). The draft held the beam to greedy decoding's head, which says
    "Message deleted." twice before it ends; the final without a draft says it once."""
    audio = prompt_audio("vm-deleted")
    partial = engine.transcribe(audio, role="partial")
    assert partial.text == "Message deleted."
    plain = engine.transcribe(audio)
    drafted = engine.transcribe(audio, draft=partial.tokens)
    assert drafted.draft_tokens == len(partial.tokens)
    assert not guards.is_repeated_utterance(drafted.text), drafted
    assert drafted.text == plain.text == "Message deleted."


def test_a_command_really_said_twice_is_transcribed_twice(engine, monkeypatch):
    """Two copies that fit their speech are not cut: the final gets its second look in the longer
    window, which keeps both."""
    frames = []
    real_run = engine._encoder.run

    def spy_run(mel):
        frames.append(mel.shape[0])
        return real_run(mel)

    monkeypatch.setattr(engine._encoder, "run", spy_run)
    command = prompt_audio("vm-deleted")
    said_twice = np.concatenate([command, np.zeros(RATE // 2, np.float32), command])
    r = engine.transcribe(said_twice)
    assert guards.repeat_unit(r.text) == (2, 2), r.text
    assert frames == [600, 1000]  # 3.3 s: the 6 s window, then the 10 s one
