"""[adapt] keep_noise / keep_finals (issue 26): off by default, caps respected, files private."""

from __future__ import annotations

import stat
import wave

import numpy as np

from voxnode.config import Config
from voxnode.config.loader import parse_config
from voxnode.stream.keeper import QUIET_FRAMES, AudioKeeper, KeepParams
from voxnode.stream.params import pipeline_params

FRAME = 320
MB = 1024 * 1024


def _params(tmp_path, noise=True, finals=True, noise_mb=64.0, finals_mb=256.0) -> KeepParams:
    return KeepParams(tmp_path / "mic", noise, int(noise_mb * MB), finals, int(finals_mb * MB))


def _wav_samples(path) -> np.ndarray:
    with wave.open(str(path)) as w:
        assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (16000, 1, 2)
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")


def test_off_by_default_and_never_for_wyoming(tmp_path) -> None:
    assert pipeline_params(Config(), "mic").keep is None
    config = parse_config(f'[adapt]\nkeep_noise = true\ndir = "{tmp_path}"\n')
    keep = pipeline_params(config, "kitchen").keep
    assert keep is not None and keep.folder == tmp_path / "kitchen" and keep.keep_noise and not keep.keep_finals
    assert keep.noise_max_bytes == 64 * MB
    assert pipeline_params(config).keep is None  # the Wyoming server's pipelines (no stream name)


def test_noise_keeps_only_frames_half_a_second_from_speech(tmp_path) -> None:
    k = AudioKeeper(_params(tmp_path), "mic")
    quiet, speech = np.full(FRAME, 100.0, np.float32), np.full(FRAME, 9000.0, np.float32)
    for _ in range(150):  # 3 s of room
        k.hear(quiet, quiet=True)
    for _ in range(50):  # 1 s of speech
        k.hear(speech, quiet=False)
    for _ in range(150):
        k.hear(quiet, quiet=True)
    k.close()
    (path,) = (tmp_path / "mic" / "noise").glob("noise-*.wav")
    x = _wav_samples(path)
    # 3 s - 0.5 s before the speech, 3 s - 0.5 s after it - 0.5 s held when the stream ended
    assert len(x) == (150 - QUIET_FRAMES + 150 - 2 * QUIET_FRAMES) * FRAME
    assert set(np.unique(x)) == {100}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "mic" / "noise").stat().st_mode) == 0o700


def test_noise_cap_keeps_the_newest(tmp_path) -> None:
    k = AudioKeeper(_params(tmp_path, noise_mb=1.0), "mic")
    rng = np.random.default_rng(0)
    for _ in range(100 * 50):  # 100 s = 3.2 MB
        k.hear(rng.normal(0, 300, FRAME).astype(np.float32), quiet=True)
    k.close()
    files = list((tmp_path / "mic" / "noise").glob("*.wav"))
    assert k.noise_bytes_written > 3 * MB
    assert 0 < sum(f.stat().st_size for f in files) <= 1 * MB + 32000 + 44


def test_finals_saved_with_their_text_until_the_cap(tmp_path) -> None:
    k = AudioKeeper(_params(tmp_path, noise=False, finals_mb=1.0), "mic")
    audio = np.full(16000 * 10, 0.25, np.float32)  # 10 s = 320 kB
    for i in range(5):
        k.final(audio, f"turn on\tthe light {i}\n", f"mic-1-{i}")
    k.hear(np.zeros(FRAME, np.float32), quiet=True)  # keep_noise off: nothing
    folder = tmp_path / "mic" / "finals"
    rows = (folder / "finals.tsv").read_text().splitlines()
    assert rows == [f"mic-1-{i}.wav\tturn on the light {i}" for i in range(3)]
    assert k.finals_saved == 3
    assert np.all(_wav_samples(folder / "mic-1-0.wav") == 8192)
    assert not (tmp_path / "mic" / "noise").exists()
    assert sum(f.stat().st_size for f in folder.glob("*.wav")) <= 1 * MB


def test_the_pipeline_keeps_the_room_between_utterances_and_each_published_final(tmp_path) -> None:
    from .test_pipeline_paths import HANGOVER, Rig, result

    r = Rig(keep=_params(tmp_path))
    r.feed("0" * 100 + "1" * 30 + "0" * HANGOVER)
    (job,) = r.sched.submitted
    r.sched.finish(job, result("Turn on the lights."))
    r.feed("0" * 100 + "1" * 30 + "0" * HANGOVER)
    r.sched.finish(r.sched.submitted[-1], result("", no_speech_prob=0.99))  # suppressed as noise: not saved
    r.pipeline.flush()
    (final,) = r.finals()
    folder = tmp_path / "mic"
    assert (folder / "finals" / "finals.tsv").read_text() == f"{final.id}.wav\tTurn on the lights.\n"
    assert len(_wav_samples(folder / "finals" / f"{final.id}.wav")) == len(job.audio)
    (noise,) = (folder / "noise").glob("*.wav")
    # Before the first utterance: 100 quiet frames less the half second before speech; between the
    # two (the utterance is open until its hangover ends): 100 less half a second on each side.
    assert len(_wav_samples(noise)) == (100 - QUIET_FRAMES + 100 - 2 * QUIET_FRAMES) * FRAME
