"""wake.confirm = "openwakeword": openWakeWord's second opinion on "alexa" (issue 24), on real recordings.

The recordings are ../shared/data/wake/alexa (Picovoice's wake-word benchmark, see its README), mixed
as scripts/bench/wake.py mixes them; openWakeWord's models come from the pyopen-wakeword package (a
test dependency; voxnode ships none of them: CC BY-NC-SA 4.0)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from scripts.bench import wake_audio as wa
from voxnode.config import Config
from voxnode.config.wake import SHIPPED_CUTOFFS, WakeConfig
from voxnode.errors import ConfigError
from voxnode.stream.params import wake_params
from voxnode.wake import confirm, openwakeword
from voxnode.wake.confirm import SecondOpinion, with_second_opinion
from voxnode.wake.detector import WakeDetector
from voxnode.wake.models import load_wake_model
from voxnode.wake.openwakeword import OwwScorer

FOLDER = wa.default_recordings()
needs_recordings = pytest.mark.skipif(
    FOLDER is None or not (FOLDER / "alexa" / "320.wav").is_file(),
    reason="no real recordings (../shared/data/wake/alexa, see its README)",
)


@pytest.fixture(scope="module")
def scorer() -> OwwScorer:
    return OwwScorer()


def _clip(name: str, kind: str, snr: float) -> tuple[np.ndarray, float, float]:
    """The bench's clip of this recording (the same noise draw as scripts/bench/wake_scores.py)."""
    assert FOLDER is not None
    names = sorted(p.name for p in (FOLDER / "alexa").glob("*.wav"))
    i = names.index(name)
    rec = wa.recordings(FOLDER, "alexa")[i]
    clip, start, end = wa.recording_in_noise(rec, kind, snr, wa.trial_clip_id(i, kind), [])
    return np.clip(np.round(clip), -32768, 32767).astype(np.int16), start, end


def _detections(clip: np.ndarray, second: SecondOpinion | None) -> list[float]:
    models = (load_wake_model("alexa"),)
    d = WakeDetector(with_second_opinion(models, 0.0) if second else models, 2000, second=second)
    return [(k + 1) * 0.02 for k in range(len(clip) // 320) if d.process(clip[k * 320 : (k + 1) * 320]) is not None]


@needs_recordings
@pytest.mark.parametrize(("name", "kind", "snr"), [("320.wav", "pink", 20.0), ("154.wav", "pink", 5.0)])
def test_a_word_microwakeword_scores_under_its_cutoff_is_heard_with_the_second_opinion(scorer, name, kind, snr):
    """320.wav (three clear syllables with a strong /ks/) never reaches microWakeWord's cutoff, 154.wav under
    pink noise at 5 dB just misses it; openWakeWord hears both."""
    clip, start, end = _clip(name, kind, snr)
    assert _detections(clip, None) == []
    heard = _detections(clip, SecondOpinion(scorer))
    assert len(heard) == 1 and start <= heard[0] <= end + 1.5


@needs_recordings
def test_the_second_opinion_decides(scorer, monkeypatch):
    """microWakeWord's rise above ARM_CUTOFF alone accepts nothing: with openWakeWord's cutoff out of reach,
    320.wav is not heard."""
    monkeypatch.setattr(confirm, "CONFIRM_CUTOFF", 1.0)
    clip, _, _ = _clip("320.wav", "pink", 20.0)
    second = SecondOpinion(scorer)
    assert _detections(clip, second) == []
    assert second.requests > 0  # it was asked, and said no


@needs_recordings
def test_the_ring_gives_the_probabilities_of_the_whole_stream(scorer):
    """What the second opinion scores from its ring, fed in blocks of any size, is what the pipeline gives on the
    whole clip at the same chunks (and what pyopen-wakeword's own library gives: scripts/bench/wake_oww.py)."""
    clip, _, _ = _clip("0.wav", "babble", 10.0)
    whole, at = scorer.probabilities(clip.astype(np.float32))
    second = SecondOpinion(scorer)
    got = {}
    step = 300  # not a divisor of the ring: its writes wrap around mid-block
    for k in range(0, len(clip) - step, step):
        second.feed(clip[k : k + step])
        complete = second._fed // 1280 * 1280
        if complete >= 28 * 1280 and complete // 1280 - 1 not in {f // 4 for f in got}:
            span = np.arange(complete - 28 * 1280, complete)
            probs, _ = scorer.probabilities(second._ring[span % len(second._ring)], pad_chunks=0)
            got[complete // 320 - 1] = probs[-1]
    frames = sorted(got)
    assert len(frames) > 20
    np.testing.assert_allclose([got[f] for f in frames], whole[np.searchsorted(at, frames)], atol=1e-5)


def test_only_alexa_has_a_second_opinion():
    config = Config(wake=WakeConfig(enabled=True, model="okay_nabu", confirm="openwakeword"))
    with pytest.raises(ConfigError, match=r'^wake\.confirm = "openwakeword": gives a second opinion on alexa only'):
        wake_params(config, "default")


def test_without_the_package_one_line_says_what_to_install(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(openwakeword.importlib.util, "find_spec", lambda n: None if n == "pyopen_wakeword" else real(n))
    config = Config(wake=WakeConfig(enabled=True, model="alexa", confirm="openwakeword"))
    with pytest.raises(ConfigError) as e:
        wake_params(config, "default")
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith('wake.confirm = "openwakeword": the pyopen-wakeword package is not installed')
    assert "pip install pyopen-wakeword" in msg and "non-commercial" in msg


def test_the_gate_gets_the_second_opinion():
    """wake.confirm = "openwakeword" reaches the stream's detector (the default, "auto", has Whisper check alexa
    instead: tests/wake/test_whisper_check.py)."""
    from voxnode.stream.wake_gate import WakeGate

    on = wake_params(Config(wake=WakeConfig(enabled=True, model="alexa", confirm="openwakeword")), "default")
    off = wake_params(Config(wake=WakeConfig(enabled=True, model="alexa", confirm="")), "default")
    assert on is not None and off is not None
    assert WakeGate(on).detector._second is not None
    assert WakeGate(off).detector._second is None
    # microWakeWord alone runs stricter with a second opinion, unless the user chose its cutoff
    assert [m.cutoff for m in on.models] == [confirm.ALONE_CUTOFF]
    assert [m.cutoff for m in off.models] == [SHIPPED_CUTOFFS["alexa"]]
    mine = WakeConfig(enabled=True, model="alexa", threshold=0.9, confirm="openwakeword")
    own = wake_params(Config(wake=mine), "default")
    assert own is not None and [m.cutoff for m in own.models] == [0.9]
