"""Silero VAD (`vad.engine = "silero"`): real speech, noise, framing, per-stream state, errors,
and the segmenter on an utterance in continuous noise. Real model, real LiteRT interpreter."""

import dataclasses
import shutil

import numpy as np
import pytest

from scripts.bench import audio_corpus as ac
from scripts.bench import speech_corpus as sc
from voxnode.config import Config
from voxnode.frontend.chain import FrontEnd, FrontEndParams, with_vad
from voxnode.frontend.errors import FrontendError
from voxnode.frontend.silero_vad import MODEL_FILE, WINDOW, SileroVad
from voxnode.models.find import SILERO_MODEL, find_model
from voxnode.stream.params import frontend_params, segmenter_params
from voxnode.stream.segmenter import Chunk, Discarded, Ended, Segmenter

MODEL_DIR = find_model(SILERO_MODEL, "vad.engine")

LIBRIVOX = [u for u in sc.pocketsphinx() if u.name.startswith("librivox/")]
needs_speech = pytest.mark.skipif(not LIBRIVOX, reason="needs pocketsphinx-testdata (make deps-test)")
SILERO = with_vad(frontend_params(Config()), engine="silero")


def vad_frames(x: np.ndarray, params: FrontEndParams = SILERO) -> np.ndarray:
    fe = FrontEnd(params)
    n = len(x) // ac.FRAME
    return np.array([fe.process(x[i * ac.FRAME : (i + 1) * ac.FRAME]).speech for i in range(n)])


def padded(clip: np.ndarray, before_s: float = 0.5, after_s: float = 0.5) -> np.ndarray:
    x = np.concatenate([ac.silence(before_s), clip, ac.silence(after_s)])
    return x[: len(x) // ac.FRAME * ac.FRAME]


@needs_speech
def test_finds_the_speech_in_clean_recordings():
    for u in LIBRIVOX:
        x = padded(ac.at_dbfs(u.audio, -26))
        truth = ac.label_speech(x)
        pred = vad_frames(x)
        recall = (pred & truth).sum() / truth.sum()
        precision = (pred & truth).sum() / max(1, pred.sum())
        assert recall >= 0.8 and precision >= 0.9, (u.name, recall, precision)


@pytest.mark.parametrize("kind,dbfs", [("white", -30), ("white", -45), ("pink", -30), ("hvac", -30)])
def test_steady_noise_alone_is_not_speech(kind, dbfs):
    x = ac.at_dbfs(ac.noise(kind, 30 * ac.RATE, seed=3), dbfs)
    pred = vad_frames(x)
    assert pred.mean() <= 0.005, f"{kind} at {dbfs} dBFS: {pred.mean():.1%} of frames called speech"


def _window_probs(x: np.ndarray, chunk: int) -> list[float]:
    vad = SileroVad()
    probs = []
    for i in range(0, len(x), chunk):
        before = vad.windows
        vad.is_speech(x[i : i + chunk], None)
        assert vad.windows - before <= 1  # chunks up to one window: every score is seen
        if vad.windows != before:
            probs.append(vad.last_prob)
    return probs


@needs_speech
def test_probabilities_do_not_depend_on_how_the_audio_is_framed():
    x = ac.at_dbfs(LIBRIVOX[0].audio, -26)[: 40 * WINDOW]
    by_frame = _window_probs(x, ac.FRAME)
    assert len(by_frame) == 40
    assert max(by_frame) > 0.9 and min(by_frame) < 0.5  # speech and pauses: the check below means something
    for chunk in (WINDOW, 123, 500):
        assert np.allclose(_window_probs(x, chunk), by_frame, atol=1e-6), chunk


def test_a_window_is_scored_as_soon_as_a_frame_completes_it():
    vad = SileroVad()
    frame = np.zeros(ac.FRAME, dtype=np.float32)
    for k in range(1, 17):
        vad.is_speech(frame, None)
        assert vad.windows == k * ac.FRAME // WINDOW  # 5 windows per 8 frames, none held back


@needs_speech
def test_each_stream_keeps_its_own_state():
    speech = ac.at_dbfs(LIBRIVOX[1].audio, -26)
    noise = ac.at_dbfs(ac.noise("pink", len(speech), seed=4), -40)
    alone = [vad_frames(speech), vad_frames(noise)]
    a, b = FrontEnd(SILERO), FrontEnd(SILERO)
    together = [[], []]
    for i in range(len(speech) // ac.FRAME):
        s = slice(i * ac.FRAME, (i + 1) * ac.FRAME)
        together[0].append(a.process(speech[s]).speech)
        together[1].append(b.process(noise[s]).speech)
    assert np.array_equal(alone[0], together[0]) and np.array_equal(alone[1], together[1])
    assert alone[0].mean() > 0.5 and alone[1].mean() == 0


def test_missing_or_corrupt_model_is_a_one_line_error(tmp_path):
    missing = tmp_path / "missing"
    shutil.copytree(MODEL_DIR, missing)
    (missing / MODEL_FILE).unlink()
    with pytest.raises(FrontendError) as e:
        SileroVad(model_dir=missing)
    msg = str(e.value)
    assert "\n" not in msg and str(missing / MODEL_FILE) in msg and 'vad.engine = "silero"' in msg

    corrupt = tmp_path / "corrupt"
    shutil.copytree(MODEL_DIR, corrupt)
    data = bytearray((corrupt / MODEL_FILE).read_bytes())
    data[len(data) // 2] ^= 0xFF
    (corrupt / MODEL_FILE).write_bytes(bytes(data))
    with pytest.raises(FrontendError, match="corrupt") as e:
        SileroVad(model_dir=corrupt)
    assert "\n" not in str(e.value) and str(corrupt / MODEL_FILE) in str(e.value)


@needs_speech
@pytest.mark.parametrize("snr_db", [10, 0])
def test_an_utterance_in_continuous_pink_noise_starts_and_ends_at_the_speech(snr_db):
    """Pink noise runs 3 s before, through and 3 s after a 7 s recording: one utterance, whose
    audio covers the speech and ends near where the speech ends. (At 0 dB the WebRTC VAD
    starts an utterance on the noise itself and splits the speech in two.)"""
    clip = ac.at_dbfs(LIBRIVOX[0].audio, -26)
    clean = np.concatenate([ac.silence(3.0), clip, ac.silence(3.0)])
    clean = clean[: len(clean) // ac.FRAME * ac.FRAME]
    truth = ac.label_speech(clean)
    x = ac.mix(clean, ac.noise("pink", len(clean), seed=9), snr_db, truth)
    # Boundaries: frames within 20 dB of the loudest. The clip's lead-in and tail (breath,
    # room tone at -45..-53 dBFS) lie under noise 10 dB below the speech: no VAD can hear them.
    levels = ac.frame_levels_db(clean)
    first, last = np.flatnonzero(levels > np.percentile(levels, 99) - 20)[[0, -1]]
    fe, seg = FrontEnd(SILERO), Segmenter(segmenter_params(Config()))
    events = []
    for i in range(len(x) // ac.FRAME):
        o = fe.process(x[i * ac.FRAME : (i + 1) * ac.FRAME])
        events += seg.push(Chunk(o.samples, i, i * 0.02, i * 0.02, o.speech, o.level_db))
    events += seg.flush()
    ended = [e for e in events if isinstance(e, Ended)]
    assert [e.reason for e in ended] == ["endpoint"], events
    assert not [e for e in events if isinstance(e, Discarded)]
    utt = ended[0].utterance
    start = utt.chunks[0].seq
    first_speech = next(c.seq for c in utt.chunks if c.speech)
    end = utt.chunks[utt.last_speech].seq
    # The utterance's audio (pre-roll included) starts before the speech, its first speech frame
    # within 100 ms of it; the last speech frame is within 300 ms of the end of the speech.
    assert start <= first and abs(first_speech - first) <= 5, (start, first_speech, first)
    assert abs(end - last) <= 15, (end, last)
    assert start + len(ended[0].audio) // ac.FRAME >= last


@needs_speech
def test_below_the_room_silero_rests_and_speech_above_it_is_still_found():
    """Defaults (Silero + noise gate): in a steady room the model is barely called (idle CPU);
    a talker above the room is found as well as with the model running on every frame."""
    clip = ac.at_dbfs(LIBRIVOX[0].audio, -26)
    clean = np.concatenate([ac.silence(6.0), clip, ac.silence(3.0)])
    clean = clean[: len(clean) // ac.FRAME * ac.FRAME]
    truth = ac.label_speech(clean)
    x = ac.mix(clean, ac.noise("pink", len(clean), seed=4), 10, truth)
    gated = FrontEnd(frontend_params(Config()))
    assert gated.params.vad.engine == "silero" and gated.params.noise_gate
    vad = gated.vad
    assert isinstance(vad, SileroVad)
    room_end = 6 * ac.RATE // ac.FRAME
    pred, scored_in_room = [], 0
    for i in range(len(x) // ac.FRAME):
        pred.append(gated.process(x[i * ac.FRAME : (i + 1) * ac.FRAME]).speech)
        if i == room_end:
            scored_in_room = vad.windows
    speech = np.array(pred)
    # 6 s of room = 187 windows: only the first ones (the floor's warm-up) and the odd peak are scored.
    assert scored_in_room < 20, scored_in_room
    assert not speech[:room_end].any()
    always = vad_frames(x, dataclasses.replace(SILERO, noise_gate=False))
    recall_gated = (speech & truth).sum() / truth.sum()
    recall_always = (always & truth).sum() / truth.sum()
    assert recall_gated >= recall_always - 0.05, (recall_gated, recall_always)
