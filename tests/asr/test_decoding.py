"""Beam search, sampling, prompts and hotwords on the committed model.

The batched decoder runs several hypotheses in one call; each must see only its
own cache rows. Prompts steer spelling on real recordings (pocketsphinx-testdata
cards: tiny.en hears "clubs" as "clothes"/"close").
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from voxnode.asr.recognizer import DecodeAbandoned
from voxnode.asr.wer import corpus_wer, normalise
from voxnode.asr.whisper import search
from voxnode.asr.whisper.decoder import EMPTY_SLOT, DecoderRunner, Hypotheses, Prefix
from voxnode.asr.whisper.tokenizer import Tokenizer
from voxnode.audio.wavfile import read_audio

from .conftest import POCKETSPHINX, pocketsphinx_utterances

# Ids from the reference tokenizer (HF `tokenizers` on the source tokenizer.json).
ENCODED = {
    " Turn on the living room lights, set the thermostat to 21°C.": [
        6756,
        319,
        262,
        2877,
        2119,
        7588,
        11,
        900,
        262,
        10811,
        1712,
        265,
        284,
        2310,
        7200,
        34,
        13,
    ],
    " 10 of clubs, queen of hearts; don't stop!": [838, 286, 9784, 11, 16599, 286, 11954, 26, 836, 470, 2245, 0],
    " Zoë's café: 3,000 naïve__x  ": [31645, 26689, 338, 40304, 25, 513, 11, 830, 41492, 834, 87, 220, 220],
}


def test_bpe_encoder_matches_the_reference_tokenizer(engine):
    tok: Tokenizer = engine._tokenizer
    for text, ids in ENCODED.items():
        assert tok.encode(text) == ids, text
        assert tok.decode_bytes(ids).decode("utf-8") == text


def test_hypotheses_cache_layout_mask_and_reorder():
    heads, dim = 2, 3
    prefix_rows = np.arange(heads * 2 * dim, dtype=np.float32).reshape(heads, 2, dim)
    prefix = Prefix({"self_k_0": prefix_rows}, 2, np.zeros(4), np.zeros(4))
    h = Hypotheses(prefix, n=3, cap=4, n_heads=heads, head_dim=dim)
    assert h.cache["self_k_0"].shape == (heads, 2 + 3 * 4, dim)
    for step in range(2):
        h.append({"self_k_0": np.full((heads, 3, dim), 0, np.float32) + np.arange(3)[None, :, None] + 10 * step})
    m = h.mask()
    assert m.shape == (3, 14 + 3)
    for i in range(3):
        seen = set(np.flatnonzero(m[i] == 0))
        assert seen == {0, 1, 2 + 4 * i, 3 + 4 * i, 14 + i}, (i, seen)
    assert np.all(m[m != 0] == EMPTY_SLOT)
    h.reorder([2, 2, 0])
    own = h.own("self_k_0")
    assert own[0, 0, 1, 0] == 12 and own[0, 1, 1, 0] == 12 and own[0, 2, 1, 0] == 10
    np.testing.assert_array_equal(h.cache["self_k_0"][:, :2], prefix_rows)
    h.reorder([1])  # fewer hypotheses: the buffers shrink
    assert h.n == 1 and h.cache["self_k_0"].shape == (heads, 2 + 4, dim) and h.own("self_k_0")[0, 0, 1, 0] == 12


def test_batched_hypotheses_see_only_their_own_rows(engine):
    """Three hypotheses in one call give the logits each gives alone (teacher-forced)."""
    wav, _ = pocketsphinx_utterances()[5]
    dec = engine._decoder
    engine._encode(read_audio(wav), 6.0)
    start = engine.start_sequence()
    histories = [[838, 286, 9784], [604, 16599, 286], [767, 286, 11954]]  # " 10 of clubs", ...
    alone = [dec.forced_logits(list(start.tokens) + h)[-1] for h in histories]
    prefix = dec.prefill(list(start.tokens), start.sot_index)
    hyps = dec.hypotheses(prefix, 3, 20)
    for t in range(3):
        logits = dec.step(hyps, [h[t] for h in histories])
    for i in range(3):
        np.testing.assert_allclose(logits[i], alone[i], atol=0.05)
        assert int(np.argmax(logits[i])) == int(np.argmax(alone[i]))


def test_beam_one_is_greedy(engine):
    wav, _ = pocketsphinx_utterances()[2]
    engine._encode(read_audio(wav), 7.0)
    start = engine.start_sequence()
    prefix = engine._decoder.prefill(list(start.tokens), start.sot_index)
    out = search.beam_search(engine._decoder, engine._rules, prefix, 60, 1)
    # Greedy by hand: the argmax of every step, teacher-forced.
    tokens: list[int] = []
    while True:
        lp = engine._rules.logprobs(engine._decoder.forced_logits(list(start.tokens) + tokens)[-1:], not tokens)
        t = int(np.argmax(lp[0]))
        if t == engine._rules.eot:
            break
        tokens.append(t)
    assert out.tokens == tokens and out.stop_reason == "eot"


def test_beam_search_on_recorded_speech(engine):
    pairs = [(ref, engine.transcribe(read_audio(wav), beam_size=5).text) for wav, ref in pocketsphinx_utterances()]
    assert corpus_wer(pairs) < 0.15, pairs


def test_partials_are_greedy_in_the_short_window(engine, monkeypatch):
    calls = []
    real = search.beam_search

    def spy(dec, rules, prefix, max_new, beam_size, bias=None, abandon=None, **kw):
        calls.append(beam_size)
        return real(dec, rules, prefix, max_new, beam_size, bias, abandon, **kw)

    monkeypatch.setattr(search, "beam_search", spy)
    wav, _ = pocketsphinx_utterances()[4]
    partial = engine.transcribe(read_audio(wav), role="partial")
    final = engine.transcribe(read_audio(wav), role="final", beam_size=3)
    assert calls == [1, 3]
    assert partial.window_s == 6.0 and partial.temperature == 0.0
    assert final.text
    with pytest.raises(ValueError, match="role"):
        engine.transcribe(read_audio(wav), role="draft")


def test_an_abandoned_decode_stops_at_the_next_model_call_and_the_engine_goes_on(engine, monkeypatch):
    wav, _ = pocketsphinx_utterances()[0]
    audio = read_audio(wav)
    whole = engine.transcribe(audio, role="partial")
    assert len(whole.tokens) > 4
    gone = threading.Event()
    gone.set()
    with pytest.raises(DecodeAbandoned):  # set before the call: nothing is decoded
        engine.transcribe(audio, role="partial", abandon=gone)
    # Set during the decode (after its second decoder step): no third step is taken.
    steps = []
    mid = threading.Event()
    real_step = DecoderRunner.step

    def step(self, hyps, tokens):
        steps.append(len(tokens))
        if len(steps) == 2:
            mid.set()
        return real_step(self, hyps, tokens)

    monkeypatch.setattr(DecoderRunner, "step", step)
    with pytest.raises(DecodeAbandoned):
        engine.transcribe(audio, role="partial", abandon=mid)
    assert len(steps) == 2
    monkeypatch.undo()
    again = engine.transcribe(audio, role="partial")  # the engine is left ready for the next call
    assert again.text == whole.text


def test_an_abandoned_final_stops_in_its_temperature_fallback_too(engine, monkeypatch):
    """A speculative final given up while it samples (its text is void) stops at the next decoder
    step as in the beam search, not after every temperature."""
    from voxnode.asr import noise
    from voxnode.asr.whisper import search

    monkeypatch.setattr(noise, "LOGPROB_THRESHOLD", 0.0)  # nothing is sure enough: always sample
    wav, _ = pocketsphinx_utterances()[0]
    audio = read_audio(wav)
    sampling = threading.Event()
    steps_after = []
    real_sample, real_step = search.sample, DecoderRunner.step

    def sample(*args, **kwargs):
        sampling.set()  # the beam search is over: the next steps are the fallback's
        return real_sample(*args, **kwargs)

    def step(self, hyps, tokens):
        if sampling.is_set():
            steps_after.append(len(tokens))
            if len(steps_after) == 2:
                gone.set()
        return real_step(self, hyps, tokens)

    gone = threading.Event()
    monkeypatch.setattr(search, "sample", sample)
    monkeypatch.setattr(DecoderRunner, "step", step)
    with pytest.raises(DecodeAbandoned):
        engine.transcribe(audio, beam_size=2, abandon=gone)
    assert len(steps_after) == 2


def test_temperature_fallback_samples_reproducibly(engine, monkeypatch):
    """When every result counts as unsure, the engine samples at rising temperatures, seeded."""
    from voxnode.asr import noise

    monkeypatch.setattr(noise, "LOGPROB_THRESHOLD", 0.0)  # nothing is sure enough
    wav, ref = pocketsphinx_utterances()[0]
    a = engine.transcribe(read_audio(wav), beam_size=2)
    b = engine.transcribe(read_audio(wav), beam_size=2)
    assert a.text == b.text and a.tokens == b.tokens
    # All tries failed the rule, so the best by mean log-probability was kept (possibly the beam's).
    assert a.temperature in (0.0, *engine.options.temperatures)
    assert a.decode_ms > 0


def test_prompt_spells_the_domain_words(engine):
    """tiny.en writes "clothes"/"close" for "clubs" on the cards recordings; a prompt naming the
    suits fixes them, and the same clips without it still have the error."""
    cards = [(w, r) for w, r in pocketsphinx_utterances() if "cards" in str(w)]
    plain = [(r, engine.transcribe(read_audio(w), prompt="").text) for w, r in cards]
    prompted = [
        (
            r,
            engine.transcribe(
                read_audio(w), prompt="Playing cards: ten of clubs, queen of clubs, seven of hearts, eight of spades."
            ).text,
        )
        for w, r in cards
    ]
    assert corpus_wer(prompted) < corpus_wer(plain), (plain, prompted)
    assert not any("cloth" in h.lower() or "close" in h.lower() for _, h in prompted), prompted


def test_hotwords_reach_the_start_sequence(engine):
    seq = engine.start_sequence(prompt="Kitchen lights.", hotwords=["clubs", "spades"])
    tok = engine._tokenizer
    assert seq.tokens[0] == tok.special("<|startofprev|>")
    assert tok.decode(list(seq.tokens)) == "clubs, spades Kitchen lights."
    assert seq.tokens[seq.sot_index] == engine._sot and seq.tokens[-1] == engine._no_timestamps
    assert engine.start_sequence().tokens == (engine._sot, engine._no_timestamps)


def test_hotword_tree_gives_back_the_bonus_of_a_broken_match():
    from voxnode.asr.whisper.hotwords import ROOT, HotwordBias

    bias = HotwordBias([[1, 2, 3], [7]], boost=2.0)
    state, delta = bias.advance(ROOT, 1)
    assert delta == 2.0 and state.pending == 2.0
    state, delta = bias.advance(state, 2)
    assert delta == 2.0 and state.pending == 4.0
    broken, delta = bias.advance(state, 9)  # "1 2 9": the match breaks, its 4.0 is taken back
    assert delta == -4.0 and broken == ROOT
    done, delta = bias.advance(state, 3)  # "1 2 3": complete, the bonus stays
    assert delta == 2.0 and done == ROOT
    restart, delta = bias.advance(state, 7)  # broken by the first token of another hotword
    assert delta == -4.0 + 2.0 and restart == ROOT
    assert sorted(bias.candidates(ROOT)) == [1, 7]


def test_hotwords_fix_a_word_the_prompt_alone_does_not(engine):
    """cards/002 "four queen of clubs": with the suits in the prompt tiny.en still writes
    "clothes" (" clubs" 1.8 nats behind); as hotwords, the beam search's bonus fixes it."""
    wav = next(w for w, _ in pocketsphinx_utterances() if w.name == "002.wav" and "cards" in str(w))
    audio = read_audio(wav)
    suits = "Suits: clubs, diamonds, hearts, spades."
    assert "clubs" not in engine.transcribe(audio, prompt=suits, hotwords=()).text.lower()
    assert (
        "clubs" in engine.transcribe(audio, prompt="", hotwords=["clubs", "diamonds", "hearts", "spades"]).text.lower()
    )
    # Irrelevant hotwords leave the words alone (the prompt they go into may change punctuation).
    plain = engine.transcribe(audio, prompt="", hotwords=()).text
    assert normalise(engine.transcribe(audio, prompt="", hotwords=["den", "Ring", "Hue"]).text) == normalise(plain)


def test_hotword_phrase_keeps_the_bonus_of_each_whole_word():
    from voxnode.asr.whisper.hotwords import ROOT, HotwordBias

    # "pound key" = [5, 6]: a word ends after position 0. "or pound to cancel" keeps pound's bonus.
    bias = HotwordBias([[5, 6]], boost=2.0, word_ends=[{0}])
    state, delta = bias.advance(ROOT, 5)
    assert delta == 2.0 and state.pending == 0.0  # banked at the end of the word
    state, delta = bias.advance(state, 9)
    assert delta == 0.0 and state == ROOT


def test_closing_punctuation_token_of_a_text(engine):
    """The token whose ".", "?" or "!" ends the text, closing quotes after it allowed (in the same
    token, or in tokens of their own: U+201D is two byte tokens); an ellipsis trails off."""
    tok: Tokenizer = engine._tokenizer

    def mark(text):
        ids = tok.encode(text)
        i = tok.closing_punctuation(ids)
        return None if i is None else tok.decode_bytes([ids[i]]).decode("utf-8")

    assert mark(" He might even have been made amiable himself.") == "."
    assert mark(" Is the Ring doorbell battery low?") == "?"
    assert mark(' He said "stop!"') == '!"'
    assert mark(" It is.\u201d") == "."
    assert mark(" Hi. ") == "."
    for text in (" five five", " Well...", " Mr. Smith", " 10 of clubs,", ' "', ""):
        assert mark(text) is None, text


def test_punctuation_prob_is_the_decoders_probability_of_the_closing_mark(engine, monkeypatch):
    """A sentence ending in "." gets the probability the decoder gave that "." (checked by teacher
    forcing), on the greedy, beam and fallback paths; a text without closing punctuation gets None."""
    from voxnode.asr import noise

    clip = POCKETSPHINX / "librivox" / "sense_and_sensibility_01_austen_64kb-0930.wav"
    audio = read_audio(clip)  # "he might even have been made amiable himself"
    for kw in ({"role": "partial"}, {"beam_size": 1}, {"beam_size": 5}):
        r = engine.transcribe(audio, **kw)
        assert r.text.endswith(".") and r.punctuation_prob is not None and 0 < r.punctuation_prob <= 1, (kw, r)
    # Greedy: the same probability from the decoder fed the text one token at a time.
    r = engine.transcribe(audio, role="partial")
    engine._encode(audio, r.window_s)
    start = list(engine.start_sequence("", ()).tokens)
    forced = engine._decoder.forced_logits(start + r.tokens[:-1])[-1:]
    lp = engine._rules.logprobs(forced, first=False)[0]
    assert r.punctuation_prob == pytest.approx(float(np.exp(lp[r.tokens[-1]])), abs=0.02)

    # Fallback: the first decode counts as unsure, the sample at 0.2 passes; its "." is scored.
    from voxnode.asr.whisper import redecode

    monkeypatch.setattr(redecode, "needs_fallback", lambda out, text_of: out.temperature == 0.0)
    r = engine.transcribe(audio, beam_size=2)
    assert r.temperature == 0.2 and r.text.endswith(".") and 0 < r.punctuation_prob <= 1
    monkeypatch.undo()

    no_mark = POCKETSPHINX / "cards" / "004.wav"  # "five five": tiny.en writes "5 5" / "five five"
    for kw in ({"role": "partial"}, {"beam_size": 5}):
        r = engine.transcribe(read_audio(no_mark), **kw)
        assert r.text and r.text[-1].isalnum() and r.punctuation_prob is None, (kw, r)
    monkeypatch.setattr(noise, "NO_SPEECH_THRESHOLD", -1.0)  # everything is "no speech": text ""
    monkeypatch.setattr(noise, "LOGPROB_THRESHOLD", 1.0)
    r = engine.transcribe(audio)
    assert r.text == "" and r.stop_reason == "no_speech" and r.punctuation_prob is None
