"""`frontend.denoise = "asr"` on a live stream: the enhancer (the real WebRTC one here) runs on the
frames of utterances only, each once, and recognition gets them enhanced; the front-end itself
(VAD, noise gate) hears the room as it is. The VAD answers from a script and a fake scheduler
records the decode jobs (tests/stream/test_pipeline_paths.py's rig); the live path with the real
engine and DeepFilterNet through ALSA is tests/stream/test_enhance_alsa.py."""

from __future__ import annotations

import dataclasses

import numpy as np

from tests.stream.test_pipeline_paths import HANGOVER, FakeScheduler, ScriptedVad
from voxnode.audio.format import PERIOD_FRAMES, PERIOD_S
from voxnode.config import Config
from voxnode.stream.jobs import JobKind
from voxnode.stream.params import pipeline_params
from voxnode.stream.pipeline import StreamPipeline


def rig(denoise: str):
    cfg = Config()
    cfg = dataclasses.replace(
        cfg,
        stream=dataclasses.replace(cfg.stream, partials=False),
        vad=dataclasses.replace(cfg.vad, noise_gate=False, engine="webrtc", end_of_turn="off"),
        frontend=dataclasses.replace(cfg.frontend, denoise=denoise, denoise_engine="webrtc"),
    )
    sched = FakeScheduler()
    p = StreamPipeline("mic", pipeline_params(cfg), sched, lambda e: None, lambda: 0.0)
    vad = ScriptedVad()
    p.frontend.vad = vad
    return p, sched, vad


def feed(p, vad, pattern: str, rng, seq0: int) -> int:
    for i, c in enumerate(pattern):
        vad.script.append(c == "1")
        samples = (1500 * rng.standard_normal(PERIOD_FRAMES)).astype(np.float32)  # steady noise, -27 dBFS
        t = (seq0 + i) * PERIOD_S
        p.feed(samples, seq0 + i, t, 1_700_000_000.0 + t)
    return seq0 + len(pattern)


def rms_db(x: np.ndarray) -> float:
    return 10 * np.log10(float(np.mean(np.asarray(x, np.float64) ** 2)) / 32768.0**2 + 1e-20)


def test_asr_mode_enhances_only_utterance_frames_and_recognition_gets_them_enhanced():
    results = {}
    for mode in ("off", "asr"):
        rng = np.random.default_rng(7)
        p, sched, vad = rig(mode)
        seq = feed(p, vad, "0" * 150 + "1" * 40 + "0" * HANGOVER, rng, 0)
        seq = feed(p, vad, "0" * 150 + "1" * 40 + "0" * HANGOVER, rng, seq)  # a second utterance
        finals = [j for j in sched.submitted if j.kind in (JobKind.FINAL, JobKind.SPECULATIVE)]
        results[mode] = (p, finals)
    p, finals = results["asr"]
    plain_p, plain_finals = results["off"]
    assert p.frontend.latency_s == 0.0  # the front-end itself does not enhance in this mode
    assert len(finals) == len(plain_finals) == 2  # the VAD's decisions, so the segmentation, are the same
    # Every frame of both utterances was enhanced once, none of the room between them.
    assert p.segmenter.active is None
    total = 2 * (150 + 40 + HANGOVER)
    n_utt = sum(j.tag[2] for j in finals)
    assert p.enhancer is not None and n_utt <= p.enhancer.frames < total / 2
    # What recognition got: the same stretch of audio, its steady noise suppressed.
    for enhanced, plain in zip(finals, plain_finals, strict=True):
        assert len(enhanced.audio) == len(plain.audio)
        assert rms_db(enhanced.audio) < rms_db(plain.audio) - 3
    assert plain_p.enhancer is None
