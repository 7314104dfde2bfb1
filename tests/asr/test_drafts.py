"""Drafts: a decode that starts from the utterance's previous hypothesis (asr/search.verified_draft).

The draft's tokens are checked in the decoder's one prefill call; decoding goes on from the first
token greedy decoding disagrees with. Greedily the text must be the decode's without a draft,
whatever the draft was (right, a partial's of shorter audio, or wrong); a beam covers the tail.
"""

from __future__ import annotations

import numpy as np
import pytest

from voxnode.asr import TranscriptResult
from voxnode.asr.wer import corpus_wer
from voxnode.asr.whisper import search
from voxnode.asr.whisper.decoder import DecoderRunner, Prefix
from voxnode.asr.whisper.hypothesis import Decoded
from voxnode.audio.wavfile import read_audio

from .conftest import pocketsphinx_utterances

PARTIAL_LAG_S = 0.5  # the live pipeline's partial interval: the last partial misses up to this much


@pytest.fixture(scope="module")
def clips():
    return [(read_audio(wav), ref) for wav, ref in pocketsphinx_utterances()[:8]]


class Decodes:
    """Each clip's plain greedy decode and its partial's draft, made once for the module: most tests
    compare against them, and decoding them again in each test was 14 of the file's 65 decodes."""

    def __init__(self, engine, clips):
        self.engine, self.clips = engine, clips
        self._plain: dict[int, TranscriptResult] = {}
        self._draft: dict[int, list[int]] = {}

    def plain(self, i: int) -> TranscriptResult:
        if i not in self._plain:
            self._plain[i] = self.engine.transcribe(self.clips[i][0], beam_size=1)
        return self._plain[i]

    def draft(self, i: int) -> list[int]:
        if i not in self._draft:
            self._draft[i] = partial_draft(self.engine, self.clips[i][0])
        return self._draft[i]


@pytest.fixture(scope="module")
def decodes(engine, clips) -> Decodes:
    return Decodes(engine, clips)


@pytest.fixture
def counted(monkeypatch):
    """Counts the decoder's calls: prefills and steps."""
    calls = {"prefill": 0, "step": 0}
    prefill, step = DecoderRunner.prefill, DecoderRunner.step

    def counting_prefill(self, *a, **kw):
        calls["prefill"] += 1
        return prefill(self, *a, **kw)

    def counting_step(self, *a, **kw):
        calls["step"] += 1
        return step(self, *a, **kw)

    monkeypatch.setattr(DecoderRunner, "prefill", counting_prefill)
    monkeypatch.setattr(DecoderRunner, "step", counting_step)
    return calls


def partial_draft(engine, audio: np.ndarray) -> list[int]:
    return engine.transcribe(audio[: len(audio) - int(PARTIAL_LAG_S * 16000)], role="partial").tokens


def test_greedy_text_is_the_same_with_a_partials_draft(engine, clips, decodes):
    before = engine.draft_stats.accepted
    for i, (audio, _) in enumerate(clips):
        plain = decodes.plain(i)
        drafted = engine.transcribe(audio, beam_size=1, draft=decodes.draft(i))
        assert drafted.tokens == plain.tokens
        assert drafted.text == plain.text and drafted.stop_reason == plain.stop_reason
        assert drafted.confidence == pytest.approx(plain.confidence, abs=0.02)
    assert engine.draft_stats.accepted > before  # the drafts were used, not ignored


def agreeing_head(draft: list[int], tokens: list[int]) -> int:
    n = 0
    while n < min(len(draft), len(tokens)) and draft[n] == tokens[n]:
        n += 1
    return n


def test_a_wrong_draft_changes_nothing(engine, clips, decodes):
    """The text alone would not show it: a verification that accepted the wrong tokens gives text
    the engine's fallback decodes again (checked: accepting every draft token still gave the same
    tokens here). So the draft's accepted head is checked too: exactly the part greedy agrees with."""
    audio, _ = clips[0]
    plain = decodes.plain(0)
    wrong = decodes.plain(3).tokens
    assert wrong[:3] != plain.tokens[:3]
    for draft in (wrong, plain.tokens[::-1], [plain.tokens[0]] * 40, plain.tokens[:4] + wrong):
        got = engine.transcribe(audio, beam_size=1, draft=draft)
        assert got.tokens == plain.tokens
        assert (got.draft_tokens, got.draft_accepted) == (len(draft), agreeing_head(draft, plain.tokens))


def test_the_whole_text_as_draft_takes_one_call_and_the_end_of_text_step(engine, clips, counted):
    audio, _ = clips[1]
    plain = engine.transcribe(audio, beam_size=1)
    assert len(plain.tokens) > 5
    steps_plain = counted["step"]
    assert steps_plain >= len(plain.tokens) - 1
    counted["step"] = counted["prefill"] = 0
    again = engine.transcribe(audio, beam_size=1, draft=plain.tokens)
    assert again.tokens == plain.tokens
    # One prefill verified every token and gave the end-of-text: no step at all.
    assert counted == {"prefill": 1, "step": 0}


def test_special_tokens_and_overlong_drafts_are_cut(engine, clips, decodes):
    audio, _ = clips[2]
    plain = decodes.plain(2)
    eot = engine._rules.eot
    junk = [eot, eot + 5, -3, *plain.tokens, *([plain.tokens[-1]] * 500)]
    assert engine.transcribe(audio, beam_size=1, draft=junk).tokens == plain.tokens
    assert engine.transcribe(audio, beam_size=1, draft=plain.tokens + [eot]).tokens == plain.tokens


def test_drafts_can_be_turned_off(engine, clips, decodes, counted, monkeypatch):
    import dataclasses

    audio, _ = clips[1]
    plain = decodes.plain(1)
    monkeypatch.setattr(engine, "options", dataclasses.replace(engine.options, draft=False))
    counted["step"] = 0
    engine.transcribe(audio, beam_size=1, draft=plain.tokens)
    assert counted["step"] >= len(plain.tokens) - 1


def test_finals_beam_the_tail_after_the_drafts_head(engine, clips, decodes, counted):
    pairs_plain, pairs_drafted = [], []
    steps = {"plain": 0, "drafted": 0}
    for i, (audio, ref) in enumerate(clips):
        draft = decodes.draft(i)
        counted["step"] = 0
        pairs_plain.append((ref, engine.transcribe(audio, beam_size=3).text))
        steps["plain"] += counted["step"]
        counted["step"] = 0
        pairs_drafted.append((ref, engine.transcribe(audio, beam_size=3, draft=draft).text))
        steps["drafted"] += counted["step"]
    assert corpus_wer(pairs_drafted) <= corpus_wer(pairs_plain) + 0.02, (pairs_plain, pairs_drafted)
    assert steps["drafted"] < 0.7 * steps["plain"], steps


def test_hotwords_rank_the_draft_as_the_search_does(engine, clips, decodes):
    audio, _ = clips[4]
    words = ("Clubs", "Hearts")
    plain = engine.transcribe(audio, beam_size=1, hotwords=words)
    drafted = engine.transcribe(audio, beam_size=1, hotwords=words, draft=decodes.draft(4))
    assert drafted.tokens == plain.tokens


def test_prefix_cut_keeps_the_rows_and_the_logits_after_them():
    keys = {"self_k_0": np.arange(2 * 7 * 3, dtype=np.float32).reshape(2, 7, 3)}
    rows = np.arange(4 * 5, dtype=np.float32).reshape(4, 5)  # after rows 3, 4, 5, 6 (a draft of 3)
    prefix = Prefix(keys, 7, np.zeros(5, np.float32), rows[-1], rows)
    cut = prefix.cut(5)  # the start (4 rows) and one draft token
    assert cut.length == 5 and cut.keys["self_k_0"].shape == (2, 5, 3)
    np.testing.assert_array_equal(cut.keys["self_k_0"], keys["self_k_0"][:, :5])
    np.testing.assert_array_equal(cut.first_logits, rows[1])
    np.testing.assert_array_equal(cut.row_logits, rows[:2])
    with pytest.raises(ValueError):
        prefix.cut(3)


def test_verified_draft_stops_at_the_first_disagreement(engine, clips, decodes):
    audio, _ = clips[0]
    plain = decodes.plain(0)
    start = engine.start_sequence()
    draft = list(plain.tokens)
    draft[4] = (draft[4] + 1) % 1000  # wrong from the fifth token on
    engine._encode(audio, float(np.ceil(len(audio) / 16000 + 1)))
    full = engine._decoder.prefill([*start.tokens, *draft], start.sot_index, draft=len(draft))
    verified = search.verified_draft(engine._rules, full, draft, 100)
    assert verified.accepted == 4 and verified.start.tokens == plain.tokens[:4]
    assert verified.prefix.length == len(start.tokens) + 4


def test_a_final_from_a_draft_keeps_its_last_words(engine):
    """A search resumed from a draft's head lets early ends into its top ranks at its first steps;
    stopping at three of them (Whisper's rule for a search from the start of the text) ended this
    clip, 0.5 s after silence, with the draft of a partial 6.4 s in, at "... to do for". While the best
    ended candidate has no closing mark it waits for more (search.UNCLOSED_PATIENCE): the same text
    as without the draft, decoded on from the draft's head, no second decode."""
    wav = next(w for w, _ in pocketsphinx_utterances() if w.stem.endswith("0870"))
    audio = np.concatenate([np.zeros(8000, np.float32), read_audio(wav), np.zeros(1600, np.float32)])
    draft = engine.transcribe(audio[: int(6.4 * 16000)], role="partial").tokens
    plain = engine.transcribe(audio)
    got = engine.transcribe(audio, draft=draft)
    assert plain.text.endswith("to do for them.")
    assert got.text == plain.text
    assert got.draft_tokens == len(draft) and got.draft_accepted > 0


def test_only_a_search_from_a_draft_without_a_closing_mark_waits_for_more_ends():
    def closing(tokens):
        return len(tokens) - 1 if tokens and tokens[-1] == 13 else None  # 13: "."

    unclosed = [Decoded([40, 41], [-0.1, -0.2, -0.3], 0.0, "eot")]
    closed = [Decoded([40, 13], [-0.1, -0.2, -0.3], 0.0, "eot")]
    assert search._enough_ended(unclosed, 3, True, closing) == 3 * search.UNCLOSED_PATIENCE
    assert search._enough_ended(closed, 3, True, closing) == 3
    assert search._enough_ended(unclosed, 3, False, closing) == 3  # from the start: Whisper's rule
    assert search._enough_ended(unclosed, 1, True, closing) == 1  # greedy decoding stays greedy
    assert search._enough_ended([], 3, True, closing) == 3


def test_a_finals_beam_takes_only_the_draft_tokens_greedy_is_sure_of(engine, clips, decodes):
    """Taking every token greedy decoding agrees with ties this clip's final to its partial's text as far
    as it goes; the beam from the start of the text puts a comma after "selfish". Gated (`asr.draft_margin`,
    1 nat by default), the head stops at the first token greedy is unsure of and the final is the beam's
    own, from fewer taken; `asr.draft_margin = 0` is the ungated behaviour.

    How far the ungated head goes depends on the int8 kernels: on the Xeon it was written on 13 of the
    draft's tokens, past "selfish" (the draft has no comma: the final "selfish is" without it), and past it
    on an AVX2-only EPYC too (stops 43-51); on an EPYC with AVX-512 VNNI (stop 52) 10, up to "selfish" (the
    final has the comma). What holds on every
    kernel is asserted: the ungated final begins with the draft's tokens it took, and gating takes fewer."""
    from dataclasses import replace

    from voxnode.asr import default_model_dir
    from voxnode.asr.whisper.engine import WhisperEngine
    from voxnode.asr.whisper.options import DecodeOptions
    from voxnode.config.asr import AsrConfig

    assert engine.options.draft_margin == AsrConfig().draft_margin == 1.0
    audio, _ = clips[2]
    draft = decodes.draft(2)
    beam = engine.transcribe(audio)
    assert "selfish, is" in beam.text
    gated = engine.transcribe(audio, draft=draft)
    options = DecodeOptions.from_config(replace(AsrConfig(), draft_margin=0.0))
    with WhisperEngine.load(default_model_dir(), options=options) as ungated_engine:
        ungated_engine.transcribe(audio[: len(audio) - int(PARTIAL_LAG_S * 16000)], role="partial")
        ungated = ungated_engine.transcribe(audio, draft=draft)
    taken = ungated.draft_accepted
    assert taken > 0 and ungated.tokens[:taken] == draft[:taken]  # the draft decided the text that far
    assert gated.text == beam.text
    assert 0 < gated.draft_accepted < taken
