"""The vocabulary-shortlist benchmark's premise (issue 23, scripts/bench/vocab_shortlist.py): a
decoder cut to a shortlist by scripts/convert/whisper/shortlist.py, run through
scripts/bench/shortlist_decoder.py, gives the full decoder's logits at every kept id, bit for bit,
and -inf elsewhere, so its argmax is the full one's wherever that falls in the shortlist: what the
benchmark's WER and CPU differences measure is the shortlist, nothing else. Checked on recorded
speech in a prefill, in teacher forcing and in beam steps; the input embeddings beside the cut
model are the shipped projection's rows."""

from __future__ import annotations

import numpy as np
import pytest

from scripts.bench import speech_corpus
from scripts.bench.shortlist_decoder import MAX_RUNS, DoubtInterpreter, Shortlist, load_engine
from scripts.convert.whisper import shortlist as cut
from voxnode.asr import default_model_dir

BELOW = 4096  # small, so that the full decoder's best token falls outside it often enough to matter


def test_expand_puts_each_logit_at_its_id_and_minus_inf_elsewhere():
    s = Shortlist(np.array([0, 1, 2, 7, 8, 11]), vocab_size=12)
    assert s.runs == [(0, 0, 3), (7, 3, 2), (11, 5, 1)]
    logits = np.arange(12, dtype=np.float32).reshape(2, 6) + 1
    full = s.expand(logits)
    assert full.shape == (2, 12) and full.dtype == np.float32
    np.testing.assert_array_equal(full[:, s.ids], logits)
    assert np.all(np.isneginf(np.delete(full, s.ids, axis=1)))


def test_expand_of_many_runs_is_the_same_by_index():
    ids = np.arange(0, 4 * MAX_RUNS, 2)  # 2 * MAX_RUNS runs of one id
    s = Shortlist(ids, vocab_size=4 * MAX_RUNS)
    assert len(s.runs) > MAX_RUNS
    logits = np.random.default_rng(0).random((3, len(ids)), np.float32)
    want = np.full((3, 4 * MAX_RUNS), -np.inf, np.float32)
    want[:, ids] = logits
    np.testing.assert_array_equal(s.expand(logits), want)


@pytest.mark.parametrize("ids", [[3, 2], [0, 0], [0, 12], [-1, 4], []])
def test_a_shortlist_rises_strictly_within_the_vocabulary(ids):
    with pytest.raises(ValueError):
        Shortlist(np.array(ids, dtype=np.int64), vocab_size=12)


def test_kept_ids_are_the_text_ids_asked_for_and_every_special_token():
    ids = cut.kept_ids(51864, 8192, 50256)
    np.testing.assert_array_equal(ids[:8192], np.arange(8192))
    np.testing.assert_array_equal(ids[8192:], np.arange(50256, 51864))
    words = cut.kept_ids(51864, 1024, 50256, np.array([5000, 300, 50300]))
    np.testing.assert_array_equal(words[:1025], [*range(1024), 5000])
    assert words[1025] == 50256 and len(words) == 1025 + 51864 - 50256
    with pytest.raises(ValueError, match="byte tokens"):
        cut.kept_ids(51864, 200, 50256)


@pytest.fixture(scope="module")
def engines(tmp_path_factory):
    out = tmp_path_factory.mktemp("shortlist") / "model"
    assert cut.main([str(default_model_dir()), str(out), "--below", str(BELOW)]) == 0
    with load_engine(default_model_dir(), 1) as full, load_engine(out, 1) as short:
        yield full, short


def test_the_embedding_beside_the_cut_model_is_the_projections_row_for_row(engines):
    full, short = engines
    every = np.arange(51864)
    np.testing.assert_array_equal(short._decoder.embedding.rows(every), full._decoder.embedding.rows(every))


def _same_at_kept_ids(full: np.ndarray, short: np.ndarray, ids: np.ndarray) -> int:
    """Asserts the logits agree at the kept ids, -inf elsewhere, the argmax wherever it is kept;
    returns how many rows had their argmax outside the shortlist."""
    np.testing.assert_array_equal(short[:, ids], full[:, ids])
    assert np.all(np.isneginf(np.delete(short, ids, axis=1)))
    outside = 0
    for f, s in zip(full, short, strict=True):
        best = int(np.argmax(f))
        if best in ids:
            assert int(np.argmax(s)) == best
        else:
            outside += 1
    return outside


def test_prefill_forcing_and_steps_give_the_full_logits_at_every_kept_id(engines):
    full_engine, short_engine = engines
    ids = short_engine._decoder.it._shortlist.ids
    outside = rows = 0
    for utt in speech_corpus.pocketsphinx()[:6]:
        audio = (utt.audio / 32768.0).astype(np.float32)
        tokens = full_engine.transcribe(audio, beam_size=1).tokens
        start = full_engine.start_sequence()
        got = []
        for e in engines:
            e._encode(audio, float(np.ceil(len(audio) / 16000 + 1)))  # as a final's window
            dec = e._decoder
            prefix = dec.prefill(list(start.tokens), start.sot_index)
            forced = dec.forced_logits([*start.tokens, *tokens])
            hyps = dec.hypotheses(prefix, 3, 8)
            steps = [dec.step(hyps, tokens[i : i + 1] * 3) for i in range(min(4, len(tokens)))]
            got.append((prefix.first_logits[None], prefix.no_speech_logits[None], forced, *steps))
        for full, short in zip(*got, strict=True):
            outside += _same_at_kept_ids(full, short, ids)
            rows += len(full)
    assert rows > 100
    assert 0 < outside < rows  # the test saw both cases


class _Logits:
    """An interpreter whose one output is fixed logits."""

    def __init__(self, logits: np.ndarray) -> None:
        self.logits = logits

    def get_tensor(self, index):
        return self.logits.copy()


def test_doubt_keeps_the_full_row_only_where_the_kept_text_tokens_are_unsure():
    # ids 0-3 kept (3 is "special": not a text token), 4-5 left out; first special 3
    logits = np.array(
        [
            [9.0, 0.0, 0.0, 9.0, 1.0, 20.0],  # sure of id 0 among the kept text tokens (not 3): cut
            [1.0, 1.0, 1.0, 0.0, 0.0, 20.0],  # three-way tie: in doubt, the full row
        ],
        np.float32,
    )
    it = DoubtInterpreter(_Logits(logits), 7, np.arange(4), first_special=3, tau=0.5)
    out = it.get_tensor(7)
    np.testing.assert_array_equal(out[0, :4], logits[0, :4])
    assert np.all(np.isneginf(out[0, 4:]))
    np.testing.assert_array_equal(out[1], logits[1])
    assert (it.calls, it.doubt_calls, it.rows, it.doubt_rows) == (1, 1, 2, 1)
