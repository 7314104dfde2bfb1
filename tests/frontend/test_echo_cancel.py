"""The stream's echo cancellers (frontend/echo_cancel.py) on real audio through a room path
(scripts/bench/echo_audio.py): the reference SpeexDSP hears follows the measured echo delay, and the
cancellers rest while the node plays nothing. The live path through ALSA: tests/stream/test_echo_alsa.py."""

from __future__ import annotations

import numpy as np
import pytest

from scripts.bench import echo_audio as ea
from scripts.bench import speech_corpus as sc
from voxnode.frontend.echo_cancel import (
    ALIGN_MARGIN_MS,
    LATENCY_SAMPLES,
    REST_AFTER_FRAMES,
    EchoCanceller,
    ReferenceDelay,
)

RATE, FRAME = 16000, 320


@pytest.fixture(scope="module")
def music() -> np.ndarray:
    tracks = sc.music_tracks()
    if not tracks:
        pytest.skip("needs asterisk-moh-opsound-wav (make deps-test)")
    return np.concatenate([x for _, x in tracks])[: 12 * RATE].astype(np.float32)


def run(ec: EchoCanceller, mic: np.ndarray, ref: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    m = np.clip(np.round(mic), -32768, 32767).astype(np.int16)
    r = np.clip(np.round(ref), -32768, 32767).astype(np.int16)
    vad, heard = [], []
    for k in range(len(m) // FRAME):
        s = slice(k * FRAME, (k + 1) * FRAME)
        v, h = ec.process(m[s], r[s])
        vad.append(v)
        heard.append(h)
    return np.concatenate(vad), np.concatenate(heard)


def erle(mic: np.ndarray, out: np.ndarray, start_s: float) -> float:
    a = int(start_s * RATE)
    m, o = mic[a : len(out)].astype(np.float64), out[a:].astype(np.float64)
    return 10 * np.log10(np.mean(m**2) / np.mean(o**2))


def test_the_delay_line_gives_the_reference_as_late_as_asked():
    d = ReferenceDelay()
    frames = [np.full(FRAME, k, dtype=np.int16) for k in range(1, 40)]
    d.follow(ALIGN_MARGIN_MS + 100.0)  # 100 ms = 5 frames
    assert d.samples == 5 * FRAME
    out = [d.process(f) for f in frames]
    assert all((o == 0).all() for o in out[:5])
    assert all((out[k] == k - 4).all() for k in range(5, 39))
    d.follow(ALIGN_MARGIN_MS + 105.0)  # within the tolerance: the filter keeps its alignment
    assert d.samples == 5 * FRAME
    d.follow(None)
    assert d.samples == 5 * FRAME


def test_speex_hears_the_reference_aligned_to_the_echo_and_takes_more_echo_out(music):
    """Echo 190 ms behind its reference, 0.3 s tail: unaligned, the filter (echo_speex.FILTER_MS)
    spends 190 ms of its taps on the delay; with the reference aligned by the delay estimate it covers
    the tail (measured here: 19.3 dB of echo out from 6 s on against 11.4 unaligned; 150 ms: 17.5
    against 13.0)."""
    echo = ea.echo_at(music, ea.room_response(190.0, seed=8), 32768.0**2 * 10 ** (-26 / 10), 0.0)
    ec = EchoCanceller("speex")
    _, heard = run(ec, echo, music)
    assert ec.delay.delay_ms is not None and abs(ec.delay.delay_ms - 190.0) < 2.0
    assert ec._aligned.samples == int((ec.delay.delay_ms - ALIGN_MARGIN_MS) * RATE / 1000)
    aligned = erle(echo, heard, 6.0)
    unaligned_ec = EchoCanceller("speex")
    unaligned_ec._aligned.follow = lambda delay_ms: None  # type: ignore[method-assign]
    _, unaligned = run(unaligned_ec, echo, music)
    assert aligned > 16.0 and aligned > erle(echo, unaligned, 6.0) + 5.0, (aligned, erle(echo, unaligned, 6.0))


@pytest.mark.parametrize("recognition", ["speex", "webrtc"])
def test_the_cancellers_rest_while_nothing_plays_and_start_again_with_the_playback(music, recognition):
    """4 s of music, 4 s of silence, 4 s of music: after REST_AFTER_FRAMES silent reference frames
    the microphone passes as it is (as late as AEC3's output where that is heard); the echo of the
    second stretch is cancelled again."""
    ref = music.copy()
    ref[4 * RATE : 8 * RATE] = 0.0
    echo = ea.echo_at(ref, ea.room_response(80.0, seed=6), 32768.0**2 * 10 ** (-26 / 10), 0.0)
    room = np.random.default_rng(1).standard_normal(len(echo)).astype(np.float32) * 30
    mic = echo + room
    ec = EchoCanceller(recognition)
    vad, heard = run(ec, mic, ref)
    resting = 4 * RATE // FRAME - REST_AFTER_FRAMES
    assert ec.rested_frames >= resting - 1  # (and a few where the music itself is silent)
    m = np.clip(np.round(mic), -32768, 32767).astype(np.int16).astype(np.float32)
    quiet = slice(int(6.5 * RATE), int(7.9 * RATE))  # resting
    late = LATENCY_SAMPLES if recognition == "webrtc" else 0
    assert np.array_equal(heard[quiet], m[quiet.start - late : quiet.stop - late])
    # the VAD hears AEC3's output, as late
    assert np.array_equal(vad[quiet], m[quiet.start - LATENCY_SAMPLES : quiet.stop - LATENCY_SAMPLES])
    # cancelled again after the rest (AEC3 on this music swings from 35 dB to 0-5 dB at 10 s, resting or not)
    assert erle(mic[: 10 * RATE], heard[: 10 * RATE], 8.5) > 10.0


def test_aec3_never_hears_digital_silence():
    """A digitally silent stretch (a gap in the node's spoken answer, a reference that delivers
    nothing) reaches AEC3 with its lowest bit dithered, so that AEC3's filters do not decay into
    denormal floats (3x its CPU on x86: frontend/echo_cancel.py DITHER_SEED); the dither is +-1 LSB and the two
    signals' patterns differ."""
    heard: list[tuple[np.ndarray, np.ndarray]] = []

    class Recorder:
        def process(self, near: np.ndarray, far: np.ndarray) -> np.ndarray:
            heard.append((near.copy(), far.copy()))
            return near

    ec = EchoCanceller("webrtc")
    ec._aec = Recorder()  # type: ignore[assignment]
    tone = (3000 * np.sin(np.arange(FRAME) * 0.3)).astype(np.int16)
    silent = np.zeros(FRAME, dtype=np.int16)
    for mic, ref in ((tone, tone), (silent, silent), (silent, None), (tone, tone)):
        ec.process(mic, ref)
    expected = ((tone, tone), (silent, silent), (silent, silent), (tone, tone))  # no reference: silence
    for (near, far), (mic, ref) in zip(heard, expected, strict=True):
        assert near.dtype == far.dtype == np.int16
        assert np.abs(near.astype(int) - mic).max() == 1 and np.abs(far.astype(int) - ref).max() == 1
        assert np.count_nonzero(near) > FRAME // 4 and np.count_nonzero(far) > FRAME // 4
    assert not np.array_equal(heard[1][0], heard[1][1])
