"""Whole-utterance repeats (issue 27, item 7): a short command must come out once, live and offline,
and a real repetition ("five five", a command said twice) must stay as said.

Real speech: the Asterisk prompts (asterisk-core-sounds-en-wav, Makefile APT_TEST) and
pocketsphinx-testdata."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from voxnode.asr.whisper import guards, redecode, search
from voxnode.asr.whisper.decoder import Prefix
from voxnode.asr.whisper.hypothesis import Decoded, Hyp, cut_at_first_copy, first_copy
from voxnode.asr.whisper.token_rules import TokenRules
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


def hypothesis(engine, text: str) -> Hyp:
    """A live hypothesis of the beam holding `text`, with a distinct end-of-text log-probability
    after each of its tokens (ends[j] = -j / 10)."""
    tokens = engine._tokenizer.encode(" " + text)
    return Hyp(tokens, [-0.1] * len(tokens), -0.1 * len(tokens), ends=[-j / 10 for j in range(len(tokens))])


def test_the_search_marks_a_phrase_said_again_faster_than_speech_and_ends_it_at_its_first_copy(engine):
    """What a looping hypothesis becomes in the search (search.beam_search's `repeat_cut`): marked
    where its second copy ends, and at the token cap (or once every live one is such a repeat) the
    candidate that ends after its first copy, scored with the end-of-text's log-probability there
    as if the search had taken it; nothing where the copies fit the speech or are one word."""
    text_of = engine._tokenizer.decode
    command = prompt_audio("vm-deleted")  # 1.2 s of speech
    cut = redecode.repeat_cut(text_of, command)
    h = hypothesis(engine, "Set bedroom light green. Set bedroom light green.")
    m = first_copy(h, cut)
    assert text_of(h.tokens[:m]) == "Set bedroom light green."
    h.first_copy = m
    out = cut_at_first_copy(h, 0.01)
    assert out.tokens == h.tokens[:m] and out.stop_reason == "eot"
    assert out.logprobs == h.logprobs[:m] + [h.ends[m]]
    # A hypothesis going on from a marked one keeps the mark: at the cap, its last copy cut short,
    # it ends at its first copy too.
    on = hypothesis(engine, "Set bedroom light green. Set bedroom light green. Set")
    on.first_copy = m
    assert first_copy(on, cut) == m and cut_at_first_copy(on, 0.01).tokens == h.tokens[:m]
    # Mid-copy, a lone word again and again, and two copies that fit their speech: not marked.
    assert first_copy(hypothesis(engine, "Set bedroom light green. Set bedroom light"), cut) == 0
    five = read_audio(POCKETSPHINX / "cards" / "004.wav")  # "five five"
    fives = hypothesis(engine, "5 5 5 5 5 5 5 5 5 5")  # more than its speech holds, but one word
    assert redecode.first_copy_cut(fives.tokens, text_of, lambda: guards.speech_span_s(five)) == 1
    assert first_copy(fives, redecode.repeat_cut(text_of, five)) == 0
    said_twice = np.concatenate([command, np.zeros(RATE // 2, np.float32), command])
    fits = redecode.repeat_cut(text_of, said_twice)
    assert first_copy(hypothesis(engine, "Message deleted. Message deleted."), fits) == 0


def test_every_search_of_a_transcription_gets_the_repeat_cut_for_its_audio(engine, monkeypatch):
    """The engine hands the search the rule for this audio's speech, partials and finals alike."""
    cuts = []
    real = search.beam_search

    def spy(*args, **kwargs):
        cuts.append(kwargs.get("repeat_cut"))
        return real(*args, **kwargs)

    monkeypatch.setattr(search, "beam_search", spy)
    audio = prompt_audio("vm-deleted")
    partial = engine.transcribe(audio, role="partial")
    engine.transcribe(audio, draft=partial.tokens)
    twice = engine._tokenizer.encode(" Message deleted. Message deleted.")
    once = engine._tokenizer.encode(" Message deleted.")
    assert len(cuts) == 2 and all(c is not None and c(twice) == len(once) for c in cuts)


class LoopingDecoder:
    """Stands in for DecoderRunner, which cannot be steered into a loop on demand (where tiny.en
    loops depends on the CPU's int8 kernels): after each token of `phrase` it gives the phrase's
    next token 4 nats more than the end-of-text, so the phrase comes again and again, as tiny.en
    says a short command again in a window mostly of padding. The search under test is the real one."""

    def __init__(self, phrase: list[int], rules: TokenRules, vocab: int) -> None:
        self.next = {t: phrase[(i + 1) % len(phrase)] for i, t in enumerate(phrase)}
        self.rules, self.vocab, self.steps = rules, vocab, 0
        first = self.logits([phrase[-1]])[0]
        self.prefix = Prefix({}, 3, np.zeros(vocab, np.float32), first)

    def logits(self, tokens: list[int]) -> np.ndarray:
        out = np.zeros((len(tokens), self.vocab), np.float32)
        for row, t in enumerate(tokens):
            if t in self.next:  # beam 3 also keeps weaker hypotheses alive: no favourite after them
                out[row, self.next[t]] = 10.0
            out[row, self.rules.eot] = -10.0
        return out

    def hypotheses(self, prefix: Prefix, n: int, max_new_tokens: int) -> LoopingDecoder:
        return self

    def reorder(self, parents: list[int]) -> None:
        pass

    def step(self, hyps: LoopingDecoder, tokens: list[int]) -> np.ndarray:
        self.steps += 1
        return self.logits(tokens)


@pytest.mark.parametrize("beam", [1, 3])
def test_a_search_saying_the_command_again_ends_at_its_first_copy_not_at_the_token_cap(engine, beam):
    """The search stops once every live hypothesis has said the command twice (greedy: partials,
    and the head a final's draft holds it to; a beam), at its first copy and an end-of-text; before,
    it went on to its own loop cut, which ends on no end-of-text, and a final was decoded again in the
    longer window."""
    text_of = engine._tokenizer.decode
    audio = prompt_audio("vm-prev")  # "Press 4 for the previous message.", 1.9 s of speech
    phrase = engine._tokenizer.encode(" Press 4 for the previous message.")
    cut = redecode.repeat_cut(text_of, audio)
    dec = LoopingDecoder(phrase, engine._rules, len(engine._rules.suppress))
    out = search.beam_search(dec, engine._rules, dec.prefix, 60, beam, repeat_cut=cut)
    assert text_of(out.tokens) == "Press 4 for the previous message." and out.stop_reason == "eot"
    assert dec.steps < 2 * len(phrase) + 2  # not on to a third copy or the cap
    dec = LoopingDecoder(phrase, engine._rules, len(engine._rules.suppress))
    plain = search.beam_search(dec, engine._rules, dec.prefix, 60, beam)
    # Without the rule: on to a third copy, where the search's own loop cut (guards.repeated_tail)
    # ends it on no end-of-text: a final would be encoded and decoded again in the longer window.
    assert dec.steps > 2 * len(phrase) + 2 and plain.stop_reason == "repetition"
