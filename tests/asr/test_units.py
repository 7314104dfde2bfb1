"""Small pieces: mel features, tokenizer, guards, windowing, WER, FIFO lock, thread count."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest

from voxnode.asr import noise
from voxnode.asr.fifo_lock import FifoLock
from voxnode.asr.mel import LogMel, mel_filters
from voxnode.asr.wer import normalise, wer
from voxnode.asr.whisper import guards
from voxnode.asr.whisper.tokenizer import Tokenizer, _printable_to_byte
from voxnode.asr.windows import SAMPLE_RATE, split_at_pauses
from voxnode.models.runtime import default_num_threads, physical_cores

pytestmark = pytest.mark.unit  # make check: needs only the venv (pyproject.toml markers)

REFERENCE = Path(__file__).parent / "data" / "mel_reference.npz"


def test_mel_matches_faster_whisper_reference():
    """The reference was computed by faster-whisper's own numpy feature extractor
    (tests/asr/make_mel_reference.py) on 1.5 s of pocketsphinx-testdata speech."""
    ref = np.load(REFERENCE)
    np.testing.assert_allclose(mel_filters(), ref["filters"], rtol=1e-5, atol=1e-7)
    ours = LogMel()(ref["pcm"].astype(np.float32) / 32768.0).T
    assert ours.shape == ref["log_mel"].shape
    np.testing.assert_allclose(ours, ref["log_mel"], atol=1e-4)


def test_mel_tone_lands_in_the_right_band():
    # Independent of any implementation: a 1 kHz tone peaks in the filter whose
    # centre is nearest 1 kHz (Slaney scale: linear below 1 kHz, 200/3 Hz per mel).
    t = np.arange(SAMPLE_RATE) / SAMPLE_RATE
    mel = LogMel()(np.sin(2 * np.pi * 1000 * t).astype(np.float32))
    assert mel.shape == (100, 80)
    filters = mel_filters()
    centres = np.argmax(filters, axis=1) * SAMPLE_RATE / 400
    assert abs(centres[int(np.argmax(mel[50]))] - 1000) <= 40
    # Slaney normalisation: each triangle has area 1 in Hz (2 / width times height-1 triangles).
    assert np.all(filters >= 0) and filters.shape == (80, 201)


def test_tokenizer_maps_every_byte_back():
    table = _printable_to_byte()
    assert sorted(table.values()) == list(range(256))
    chars = {b: c for c, b in table.items()}
    tokens = [chars[b] for b in range(256)] + ["<|endoftext|>"]
    tok = Tokenizer(tokens, eot=256)
    assert tok.decode_bytes(list(range(256))) == bytes(range(256))
    # "café" in two tokens split inside the UTF-8 sequence of é
    tok2 = Tokenizer(["Ġcaf", chars[0xC3], chars[0xA9], "<|endoftext|>"], eot=3)
    assert tok2.decode([0, 1, 2, 3]) == "café"


def test_tokenizer_on_the_real_vocabulary(engine):
    tok = engine._tokenizer
    assert tok.tokens[tok.eot] == "<|endoftext|>"
    ids = [i for i, t in enumerate(tok.tokens[: tok.eot]) if t in ("ĠHello", ",", "Ġworld", "!")]
    order = {tok.tokens[i]: i for i in ids}
    assert tok.decode([order["ĠHello"], order[","], order["Ġworld"], order["!"]]) == "Hello, world!"


def test_repetition_guard():
    assert guards.repeated_tail([1, 2, 3]) == 0
    assert guards.repeated_tail([5, 5, 5]) == 0  # "no, no, no" is speech
    loop = [9] + [1, 2, 3, 4] * 3
    assert guards.repeated_tail(loop) == 8  # keep one copy of the clause
    assert guards.repeated_tail([7] * 12) == 11
    assert guards.compression_ratio("the cat " * 30) > guards.COMPRESSION_RATIO_THRESHOLD
    assert guards.compression_ratio("Please remind me to call the plumber on Friday.") < 2.0
    assert guards.max_new_tokens(1.0) < guards.max_new_tokens(10.0) <= guards.MAX_NEW_TOKENS


def test_no_speech_rule():
    assert noise.is_no_speech(0.9, -1.5)
    assert not noise.is_no_speech(0.9, -0.2)  # confident text wins
    assert not noise.is_no_speech(0.1, -1.5)
    assert noise.is_no_speech(0.5, -1.5, threshold=0.4) and not noise.is_no_speech(0.5, -1.5)
    # What the daemon does not publish: that rule at the configured threshold, or very unsure text.
    assert noise.is_noise(0.65, -1.2, 0.6, -3.0) and not noise.is_noise(0.65, -0.3, 0.6, -3.0)
    assert noise.is_noise(0.0, -3.5, 0.6, -3.0)


def test_windows_cut_in_pauses():
    rng = np.random.default_rng(3)
    sr = SAMPLE_RATE
    # 70 s: speech-like bursts with 0.6 s pauses at known places.
    audio = (0.2 * rng.standard_normal(70 * sr)).astype(np.float32)
    pauses = [(19.0, 19.6), (25.0, 25.6), (44.0, 44.6), (52.0, 52.6)]
    for a, b in pauses:
        audio[int(a * sr) : int(b * sr)] *= 0.001
    spans = split_at_pauses(audio)
    assert spans[0][0] == 0 and spans[-1][1] == len(audio)
    assert all(s1[1] == s2[0] for s1, s2 in zip(spans, spans[1:], strict=False))
    assert all((e - s) / sr <= 28.0 for s, e in spans)
    for _, end in spans[:-1]:
        assert any(a <= end / sr <= b for a, b in pauses), end / sr


def test_short_audio_is_one_window():
    assert split_at_pauses(np.zeros(10 * SAMPLE_RATE, np.float32)) == [(0, 10 * SAMPLE_RATE)]


def test_wer_normalisation():
    assert normalise("Mr. John Dashwood's 10 cold-hearted") == [
        "mister",
        "john",
        "dashwood's",
        "ten",
        "cold",
        "hearted",
    ]
    assert wer("ten of clubs", "10 of clubs.") == 0.0
    assert wer("a b c d", "a x c") == pytest.approx(0.5)


def test_fifo_lock_serves_in_arrival_order():
    lock = FifoLock()
    order = []
    lock.__enter__()
    threads = []
    for i in range(5):
        t = threading.Thread(target=lambda i=i: (lock.__enter__(), order.append(i), lock.__exit__()))
        t.start()
        threads.append(t)
        time.sleep(0.05)  # let each queue before the next arrives
    assert lock.waiting == 6
    lock.__exit__()
    for t in threads:
        t.join(5)
    assert order == [0, 1, 2, 3, 4]


def test_default_threads_are_the_cores_shared_by_the_engines_up_to_four():
    # a 4-core Pi Zero 2 W / Pi 4 / Pi 5 gives its one engine all 4 (stop 39: the emulated Pi 4's final
    # p50 ~610 -> ~430 ms); a 2- or 3-core box keeps a core free; a 16-core PC no more than 4 per engine
    assert [default_num_threads(n) for n in (1, 2, 3, 4, 6, 8, 16)] == [1, 1, 2, 4, 4, 4, 4]
    # [stream] decode_workers engines share the cores instead of each taking all of them
    assert [default_num_threads(4, engines) for engines in (1, 2, 3, 4, 8)] == [4, 2, 1, 1, 1]
    assert default_num_threads(16, 2) == 4 and default_num_threads(2, 2) == 1
    assert default_num_threads() == default_num_threads(physical_cores())


def test_decode_workers_load_engines_with_their_share_of_the_cores(monkeypatch):
    from voxnode.asr.backends import load_recognizers
    from voxnode.config.asr import AsrConfig
    from voxnode.models import runtime

    monkeypatch.setattr(runtime, "physical_cores", lambda: 4)  # as on a Pi: 3 engines share its 4 cores

    def threads(config, count):
        engines = load_recognizers(config, count)
        for e in engines:
            e.close()
        return [e.info.num_threads for e in engines]

    assert threads(AsrConfig(), 3) == [1, 1, 1]
    assert threads(AsrConfig(), 1) == [4]
    assert threads(AsrConfig(num_threads=3), 2) == [3, 3]  # set by the user: kept as it is
