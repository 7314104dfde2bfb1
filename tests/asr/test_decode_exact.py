"""The decode's cheaper bookkeeping gives the plain code's tokens and log-probabilities, bit for bit.

Issue 23's fourth pass cut what a final's decode spends besides the model's own arithmetic
(docs/benchmarks.md, "Where a decoder step goes"). None of it may change a decode. The plain code
of before is kept here as the oracle: suppressed tokens through a boolean mask over the vocabulary,
each hypothesis's best tokens by np.argpartition, the draft's rows checked one at a time, every
cache row copied into the decoder's inputs at every step. The engine decodes the recorded clips
of the draft tests both ways, as finals (beam 3) with the last partial's draft, greedily with it,
without a draft (beam 3 and beam 5), and with hotwords; every result must be the same: tokens,
and the mean log-probability to the last bit (a log-probability changed while the tokens stay
shows there). One difference is by design: among tokens of exactly equal log-probability the
lower id now ranks first (np.argpartition left that order to its partition).
"""

from __future__ import annotations

import numpy as np
import pytest

from voxnode.asr import mel
from voxnode.asr.whisper import search
from voxnode.asr.whisper.decoder import DecoderRunner, log_softmax
from voxnode.asr.whisper.hypothesis import Hyp
from voxnode.asr.whisper.search import top_tokens
from voxnode.asr.whisper.token_rules import TokenRules
from voxnode.audio.wavfile import read_audio

from .conftest import pocketsphinx_utterances

PARTIAL_LAG_S = 0.5  # as tests/asr/test_drafts.py: the last partial misses up to this much


def plain_logprobs(self, logits: np.ndarray, first: bool) -> np.ndarray:
    """TokenRules.logprobs before the fourth pass."""
    logits[:, self.suppress] = -np.inf
    if first:
        logits[:, self.suppress_begin] = -np.inf
    return log_softmax(logits)


def plain_candidates(live, lp, k, bias):
    """search._candidates before the fourth pass: np.argpartition over the vocabulary."""
    scored = {}
    k = min(k, lp.shape[1])
    for i, h in enumerate(live):
        tokens = np.argpartition(lp[i], -k)[-k:].tolist()
        if bias is not None:
            tokens += [t for t in bias.candidates(h.bias) if t not in tokens]
        for t in tokens:
            if not np.isfinite(lp[i, t]):
                continue
            state, delta = bias.advance(h.bias, t) if bias is not None else (search.ROOT, 0.0)
            scored[(*h.tokens, t)] = (h.total + h.bonus + delta + float(lp[i, t]), i, t, state, delta)
    return sorted(scored.values(), key=lambda c: c[0], reverse=True)


def plain_verified_draft(rules, prefix, draft, max_new_tokens, bias=None, min_margin=0.0):
    """search.verified_draft before the fourth pass: one row's log-probabilities at a time (with the
    finals' gate of stop 45: the greedy choice must lead the runner-up by `min_margin`)."""
    h = Hyp([], [], 0.0)
    for i, token in enumerate(draft):
        lp = rules.logprobs(prefix.row_logits[i : i + 1].copy(), first=not h.tokens)
        best_choice = search._candidates([h], lp, 2, bias)
        if not best_choice:
            break
        score, _, t, state, delta = best_choice[0]
        if t != token or t == rules.eot:
            break
        if min_margin > 0 and len(best_choice) > 1 and score - best_choice[1][0] < min_margin:
            break
        total = h.total + float(lp[0, t])
        ends = h.ends + [float(lp[0, rules.eot])]  # the end-of-text's log-probability (stop 53's repeat cut)
        nxt = Hyp(h.tokens + [t], h.logprobs + [float(lp[0, t])], total, h.bonus + delta, state, ends)
        if search.repeated_tail(nxt.tokens) or len(nxt.tokens) >= max_new_tokens:
            break
        h = nxt
    return search.Verified(prefix.cut(prefix.length - len(draft) + len(h.tokens)), h)


def plain_invoke(self, feeds, hyps=None):
    """DecoderRunner._invoke before the fourth pass: every input but the audio set on every call."""
    feeds = {**feeds, **self._cross, **(hyps.cache if hyps is not None else {})}
    changed = [name for name, arr in feeds.items() if self._shapes.get(name) != arr.shape]
    if changed:
        for name in changed:
            self.it.resize_tensor_input(self.inputs[name], list(feeds[name].shape))
            self._shapes[name] = feeds[name].shape
        self.it.allocate_tensors()
        self._cross_set = False
    for name, arr in feeds.items():
        if not (self._cross_set and name.startswith("cross_")):
            self.it.set_tensor(self.inputs[name], arr)
    self._cross_set = True
    self._holds = None  # the fast path's state: never trusted after a plain call
    self.it.invoke()


def plain(monkeypatch) -> None:
    monkeypatch.setattr(TokenRules, "logprobs", plain_logprobs)
    monkeypatch.setattr(search, "verified_draft", plain_verified_draft)
    monkeypatch.setattr(search, "_candidates", plain_candidates)
    monkeypatch.setattr(DecoderRunner, "_invoke", plain_invoke)


@pytest.fixture(scope="module")
def clips(engine):
    out = []
    for wav, _ in pocketsphinx_utterances()[:8]:
        audio = read_audio(wav)
        draft = engine.transcribe(audio[: len(audio) - int(PARTIAL_LAG_S * 16000)], role="partial").tokens
        out.append((audio, draft))
    return out


SETTINGS = (
    {"beam_size": 3, "with_draft": True},
    {"beam_size": 1, "with_draft": True},
    {"beam_size": 3, "with_draft": False},
    {"beam_size": 5, "with_draft": False},
)


def decode_all(engine, clips) -> list[tuple[list[int], float, float | None, int]]:
    out = []
    for audio, draft in clips:
        for s in SETTINGS:
            r = engine.transcribe(audio, beam_size=s["beam_size"], draft=draft if s["with_draft"] else ())
            out.append((r.tokens, r.confidence, r.punctuation_prob, r.draft_accepted))
    audio, draft = clips[4]  # the cards: hotwords rank the draft and the beam
    r = engine.transcribe(audio, beam_size=3, hotwords=("Clubs", "Hearts"), draft=draft)
    out.append((r.tokens, r.confidence, r.punctuation_prob, r.draft_accepted))
    return out


def test_the_decode_is_the_plain_codes_bit_for_bit(engine, clips, monkeypatch):
    fast = decode_all(engine, clips)
    with monkeypatch.context() as m:
        plain(m)
        reference = decode_all(engine, clips)
    assert sum(r[3] for r in reference) > 20  # the drafts were verified, not ignored
    for i, (got, want) in enumerate(zip(fast, reference, strict=True)):
        assert got == want, (i, got, want)


def test_top_tokens_best_first_ties_by_id_never_a_suppressed_one():
    row = np.array([0.5, -np.inf, 2.0, 0.5, 1.0, -np.inf], np.float32)
    kept = row.copy()
    assert top_tokens(row, 3) == [2, 4, 0]
    np.testing.assert_array_equal(row, kept)  # the row is left as it was
    assert top_tokens(row, 10) == [2, 4, 0, 3]
    assert top_tokens(np.full(4, -np.inf, np.float32), 2) == []


def plain_power_spectrogram(audio: np.ndarray) -> np.ndarray:
    """mel.power_spectrogram before the fourth pass: every frame through the FFT."""
    padded = np.pad(np.asarray(audio, np.float32), mel.N_FFT // 2, mode="reflect")
    n_frames = 1 + (len(padded) - mel.N_FFT) // mel.HOP_LENGTH
    step = padded.strides[0]
    frames = np.lib.stride_tricks.as_strided(padded, (n_frames, mel.N_FFT), (step * mel.HOP_LENGTH, step))
    window = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(mel.N_FFT) / mel.N_FFT)).astype(np.float32)
    spectrum = np.fft.rfft(frames * window, axis=-1)
    return (spectrum.real.astype(np.float32) ** 2 + spectrum.imag.astype(np.float32) ** 2)[:-1]


def test_the_zero_padded_windows_spectrum_is_the_plain_ones_bit_for_bit():
    """Speech zero-padded to a 6 s window, its last sample anywhere around a frame's edges."""
    rng = np.random.default_rng(3)
    for n in (0, 1, 159, 160, 161, 200, 201, 361, 16000, 44999, 95999, 96000):
        audio = np.zeros(96000, np.float32)
        audio[:n] = rng.standard_normal(n).astype(np.float32) * 0.1
        if n:
            audio[n - 1] = 0.3  # the last sample is not zero
        np.testing.assert_array_equal(mel.power_spectrogram(audio), plain_power_spectrogram(audio), err_msg=str(n))
    wav, _ = pocketsphinx_utterances()[0]
    audio = np.zeros(96000, np.float32)
    speech = read_audio(wav)[:80000]
    audio[: len(speech)] = speech
    np.testing.assert_array_equal(mel.power_spectrogram(audio), plain_power_spectrogram(audio))
