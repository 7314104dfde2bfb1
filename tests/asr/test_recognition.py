"""The committed int8 model recognises real and synthetic speech, and stays quiet otherwise."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from voxnode.asr.wer import corpus_wer, wer
from voxnode.audio.wavfile import read_audio

from .conftest import pocketsphinx_utterances

SR = 16000


def test_engine_info_reports_full_xnnpack_delegation(engine):
    info = engine.info
    assert info.runtime == "ai-edge-litert"
    assert info.model == "whisper-tiny.en" and info.quantization == "int8"
    assert info.xnnpack_applied is True
    assert info.ops_total > 100 and info.ops_not_delegated == 0
    assert info.num_threads >= 1 and info.load_ms > 0
    d = info.as_dict()
    assert {
        "runtime",
        "runtime_version",
        "model",
        "quantization",
        "xnnpack_applied",
        "ops_total",
        "ops_not_delegated",
        "num_threads",
        "load_ms",
    } <= d.keys()


def test_recorded_speech_from_pocketsphinx_testdata(engine):
    pairs = []
    for wav, ref in pocketsphinx_utterances():
        r = engine.transcribe(read_audio(wav))
        pairs.append((ref, r.text))
        assert r.duration_s == pytest.approx(len(read_audio(wav)) / SR, abs=1e-3)
        assert r.encode_ms > 0 and r.decode_ms > 0
        assert r.confidence <= 0 and 0 < r.probability <= 1
        assert r.tokens and all(0 <= t < 50256 for t in r.tokens)
    assert len(pairs) == 10
    # Reference transcripts are the corpus's; Whisper tiny.en mishears "ill disposed" and "clubs".
    assert corpus_wer(pairs) < 0.20, pairs


def test_espeak_sentences(engine, espeak_clips):
    pairs = [(text, engine.transcribe(read_audio(path)).text) for path, text in espeak_clips]
    assert corpus_wer(pairs) < 0.15, pairs
    for ref, hyp in pairs:
        assert wer(ref, hyp) <= 0.3, (ref, hyp)


def _hum(seconds: float) -> np.ndarray:
    t = np.arange(int(seconds * SR)) / SR
    # Mains hum: 50 Hz with the odd harmonics a transformer adds.
    return (
        0.3 * np.sin(2 * np.pi * 50 * t) + 0.1 * np.sin(2 * np.pi * 150 * t) + 0.05 * np.sin(2 * np.pi * 250 * t)
    ).astype(np.float32)


@pytest.mark.parametrize("kind", ["silence", "white_noise", "quiet_noise", "hum_50hz"])
def test_non_speech_gives_empty_text(engine, kind):
    rng = np.random.default_rng(7)
    audio = {
        "silence": np.zeros(5 * SR, np.float32),
        "white_noise": (0.1 * rng.standard_normal(5 * SR)).astype(np.float32),
        "quiet_noise": (0.003 * rng.standard_normal(5 * SR)).astype(np.float32),
        "hum_50hz": _hum(5),
    }[kind]
    r = engine.transcribe(audio)
    assert r.text == "" and r.tokens == [], (kind, r)


def test_longer_than_30_seconds_is_refused_by_the_engine(engine):
    with pytest.raises(ValueError, match="30"):
        engine.transcribe(np.zeros(31 * SR, np.float32))


def test_concurrent_callers_get_the_same_results_as_sequential(engine):
    clips = [read_audio(w) for w, _ in pocketsphinx_utterances()[5:8]]
    expected = [engine.transcribe(a).text for a in clips]
    got: dict[int, str] = {}

    def worker(i):
        got[i] = engine.transcribe(clips[i]).text

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(clips))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert [got[i] for i in range(len(clips))] == expected


def test_recorded_utterances_end_with_end_of_text(engine):
    """No utterance of the corpus ends in a loop or at the token cap (short windows are retried)."""
    reasons = {wav.name: engine.transcribe(read_audio(wav)).stop_reason for wav, _ in pocketsphinx_utterances()}
    assert set(reasons.values()) == {"eot"}, reasons


def _spy_first_decode(engine, monkeypatch, first_stop: str, copies: int) -> tuple[list[int], list]:
    """The encoder passes' frames, and the decodes: the first pretends to have looped (`first_stop`,
    its tokens said `copies` times)."""
    from voxnode.asr.whisper import search
    from voxnode.asr.whisper.hypothesis import Decoded

    frames: list[int] = []
    real_run = engine._encoder.run

    def spy_run(mel):
        frames.append(mel.shape[0])
        return real_run(mel)

    calls = []
    real_search = search.beam_search

    def looping_first(dec, rules, prefix, max_new, beam_size, bias=None, abandon=None, **kw):
        out = real_search(dec, rules, prefix, max_new, beam_size, bias, abandon, **kw)
        calls.append(out)
        if len(calls) == 1:
            ended = out.logprobs[len(out.tokens) :] if first_stop == "eot" else []
            logprobs = out.logprobs[: len(out.tokens)] * copies + ended
            return Decoded(out.tokens * copies, logprobs, out.no_speech_prob, first_stop)
        return out

    monkeypatch.setattr(engine._encoder, "run", spy_run)
    monkeypatch.setattr(search, "beam_search", looping_first)
    return frames, calls


def test_a_window_that_loops_is_retried_longer(engine, monkeypatch):
    """A decode that did not end is redone in a longer window; the longer window's result is kept."""
    frames, _ = _spy_first_decode(engine, monkeypatch, "repetition", 1)
    wav, ref = pocketsphinx_utterances()[4]  # 3.3 s
    r = engine.transcribe(read_audio(wav))
    window = engine.options.min_window_s
    assert window == 6.0
    assert frames == [600, 1000]  # then 10 s: at least 10, and 4 s more than the window that looped
    assert r.stop_reason == "eot" and wer(ref, r.text) < 0.2 and r.window_s == 10.0
    assert r.encode_ms > 0


def test_an_utterance_said_again_faster_than_speech_is_cut_without_a_second_encode(engine, monkeypatch):
    """The decoder ended, but said the utterance twice where its speech holds one copy: the first copy
    is kept from the same window (a longer window's encode, ~250 ms of CPU here and ~0.5 s on a Pi 4,
    gave the same words: stop 48), and nothing marks the result as a retry."""
    frames, calls = _spy_first_decode(engine, monkeypatch, "eot", 2)
    wav, ref = pocketsphinx_utterances()[4]  # 3.3 s
    r = engine.transcribe(read_audio(wav))
    assert frames == [600] and len(calls) == 1  # one encode, one decode
    assert r.text == engine._tokenizer.decode(calls[0].tokens)  # the first copy: the decode as said
    assert r.stop_reason == "eot" and r.window_s == 6.0 and wer(ref, r.text) < 0.2


def test_retry_window_is_at_least_10_s_and_4_s_longer():
    from voxnode.asr.whisper.window import retry_window

    assert [retry_window(w) for w in (6.0, 7.0, 9.0, 20.0, 28.0)] == [10.0, 11.0, 13.0, 24.0, 30.0]


def test_a_partial_that_loops_is_not_retried(engine, monkeypatch):
    """A partial is replaced a moment later: it keeps what its one window gave (a second, longer
    encode would only delay the final waiting behind it)."""
    from voxnode.asr.whisper import search
    from voxnode.asr.whisper.hypothesis import Decoded

    frames = []
    real_run = engine._encoder.run

    def spy_run(mel):
        frames.append(mel.shape[0])
        return real_run(mel)

    real_search = search.beam_search

    def looping(dec, rules, prefix, max_new, beam_size, bias=None, abandon=None, **kw):
        out = real_search(dec, rules, prefix, max_new, beam_size, bias, abandon, **kw)
        return Decoded(out.tokens, out.logprobs, out.no_speech_prob, "repetition")

    monkeypatch.setattr(engine._encoder, "run", spy_run)
    monkeypatch.setattr(search, "beam_search", looping)
    wav, ref = pocketsphinx_utterances()[4]  # 3.3 s
    r = engine.transcribe(read_audio(wav), role="partial")
    assert frames == [600]  # the 6 s partial window, once
    assert r.window_s == 6.0 and r.stop_reason == "repetition" and wer(ref, r.text) < 0.2


def test_repeated_phrase_rule():
    from voxnode.asr.whisper.guards import repeated_phrase

    assert repeated_phrase("Press 6 to play the next message. Press 6 to play the next message.")
    assert repeated_phrase("ten of clubs, ten of clubs.")
    assert repeated_phrase("5 5 5 5")
    assert not repeated_phrase("no, no, no")
    assert not repeated_phrase("five five")
    assert not repeated_phrase("Please enter your password followed by the pound key.")
    # A loop that re-spells a compound (live, babble 20 dB) is still a loop; words that merely run
    # into each other are not.
    assert repeated_phrase("Press zero for mailbox options. Press zero for mail box options.")
    assert not repeated_phrase("He said that that was that.")
