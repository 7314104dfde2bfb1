"""A Wyoming request's final decoded in pieces (wyoming_stt/slices.py, issue 27): real recorded speech
(pocketsphinx-testdata) through the real decode scheduler. The first test's engine is a stand-in that
records what it is asked, because the point is how the audio is cut and what each piece is told;
the second runs the real Whisper engine and checks the joined text."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from scripts.bench import speech_corpus as sc
from voxnode.asr.recognizer import TranscriptResult
from voxnode.asr.wer import wer
from voxnode.asr.windows import frame_energy
from voxnode.audio.format import PERIOD_FRAMES, SAMPLE_RATE
from voxnode.config import Config
from voxnode.stream.jobs import DecodeJob, JobKind, JobOutcome
from voxnode.stream.params import scheduler_params
from voxnode.stream.scheduler import DecodeScheduler
from voxnode.wyoming_stt.slices import SLICE_S, SlicedFinal

pytestmark = pytest.mark.skipif(not sc.PS_DATA.exists(), reason="needs pocketsphinx-testdata")


def request(max_s: float = 29.0) -> tuple[np.ndarray, str]:
    """Whole utterances back to back, as a satellite would send a long request: audio in [-1, 1]."""
    parts, texts, n = [], [], 0
    for u in sc.pocketsphinx() * 3:
        if n + len(u.audio) > max_s * SAMPLE_RATE:
            break
        parts.append(u.audio)
        texts.append(u.text)
        n += len(u.audio)
    return np.concatenate(parts) / 32768.0, " ".join(texts)


class Recording:
    """Stand-in engine: answers "p<i>" for the i-th piece (a noise "p1" for the second) and records
    each call's audio and prompt."""

    def __init__(self):
        self.calls: list[tuple[np.ndarray, str | None]] = []

    def transcribe(self, audio, role="final", prompt=None, hotwords=None, abandon=None):
        self.calls.append((audio, prompt))
        n = len(self.calls) - 1
        noise = n == 1
        return TranscriptResult(f"p{n}", [1], -0.1, 0.99 if noise else 0.0, 1.0, 1.0, len(audio) / SAMPLE_RATE)


def run(engine, audio: np.ndarray, prompt: str = ""):
    sched = DecodeScheduler([engine], scheduler_params(Config()))
    done = threading.Event()
    got = []

    def piece(a, p, language, on_done):
        return DecodeJob("wyoming:1", JobKind.FINAL, a, on_done, prompt=p, tenant="wyoming:requests", background=True)

    sliced = SlicedFinal(
        sched,
        piece,
        audio,
        prompt,
        lambda r: r.text if r.no_speech_prob < 0.5 else "",
        lambda d: (got.append(d), done.set()),
    )
    sched.start()
    try:
        sliced.start()
        assert done.wait(120)
    finally:
        sched.stop(time.monotonic() + 10)
    return sliced, got


def test_a_long_request_is_cut_at_its_pauses_and_each_piece_reads_the_text_before_it():
    audio, _ = request()
    engine = Recording()
    sliced, got = run(engine, audio, prompt="Kitchen lights.")
    (decoded,) = got
    assert decoded.outcome == JobOutcome.DONE
    pieces = [a for a, _ in engine.calls]
    assert sliced.pieces == len(pieces) >= 29 // SLICE_S
    assert all(len(a) <= SLICE_S * SAMPLE_RATE for a in pieces)
    assert np.array_equal(np.concatenate(pieces), audio)  # in order, nothing lost or repeated
    # Each cut is in a pause: quieter than most of the request.
    energy = frame_energy(audio)
    cuts = np.cumsum([len(a) for a in pieces])[:-1] // PERIOD_FRAMES
    assert all(energy[c] < np.percentile(energy, 25) for c in cuts), [energy[c] for c in cuts]
    # The [asr] prompt, then the text of the last piece that said something (the second one is noise).
    prompts = [p for _, p in engine.calls]
    assert prompts[:3] == ["Kitchen lights.", "Kitchen lights. p0", "Kitchen lights. p0"]
    assert prompts[3:] == [f"Kitchen lights. p{i}" for i in range(2, len(pieces) - 1)]
    assert decoded.text == " ".join(f"p{i}" for i in range(len(pieces)) if i != 1)
    assert decoded.audio_s == pytest.approx(len(audio) / SAMPLE_RATE)


def test_the_pieces_of_a_long_request_say_what_was_said():
    """The real engine: 8 s pieces, each prompted by the one before, against the reference. On 8
    such requests the pieces' WER was 3.8 %, the whole request's 4.3 % (docs/reliability.md)."""
    from voxnode.asr import default_model_dir
    from voxnode.asr.whisper.engine import WhisperEngine

    audio, reference = request()
    with WhisperEngine.load(default_model_dir()) as engine:
        _, got = run(engine, audio)
    (decoded,) = got
    assert decoded.outcome == JobOutcome.DONE
    assert len(decoded.results) >= 4
    assert wer(reference, decoded.text) <= 0.1, (reference, decoded.text)
