"""Several wake words on one stream, each named in its events; the detector resting on silence.

The spoken words are espeak-ng's; the detector, its models, the front-end and the gate are the real ones.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.wake.test_wake import COMMAND, WAKE, _offline, ac, speech
from voxnode.config import parse_config
from voxnode.errors import ConfigError
from voxnode.preflight import check_runnable
from voxnode.stream.params import wake_params
from voxnode.wake.detector import WakeDetector
from voxnode.wake.models import load_wake_model, load_wake_models
from voxnode.wake.silence import SilenceSkip

pytestmark = pytest.mark.skipif(not ac.have_espeak(), reason="needs espeak-ng and sox (make deps-test)")


def two_words() -> np.ndarray:
    return np.concatenate(
        [
            ac.silence(0.5),
            speech(WAKE, speed=150),
            ac.silence(0.6),
            speech(COMMAND),
            ac.silence(2.0),
            speech("alexa"),
            ac.silence(0.6),
            speech(COMMAND, "en-gb"),
            ac.silence(1.5),
        ]
    )


def pcm(audio: np.ndarray) -> np.ndarray:
    return np.clip(np.round(audio), -32768, 32767).astype(np.int16)


def test_one_front_end_several_models_each_scored_as_alone():
    """The models share the front-end's features: each one's probabilities are exactly what it
    gives alone, and the detection names the model that fired."""
    audio = pcm(two_words())
    both = WakeDetector(load_wake_models("okay_nabu, alexa"), 2000)
    alone = {m: WakeDetector(load_wake_model(m), 2000) for m in ("okay_nabu", "alexa")}
    heard = []
    for i in range(0, len(audio) - 319, 320):
        frame = audio[i : i + 320]
        if both.process(frame) is not None:
            heard.append(both.heard.name)
        for d in alone.values():
            d.process(frame)
        assert [s.last_probability for s in both._scorers] == [d.last_probability for d in alone.values()]
    assert heard == ["okay_nabu", "alexa"]


def test_each_word_opens_its_own_session_and_its_events_name_it():
    pipeline, sched, events = _offline(two_words(), '[wake]\nenabled = true\nmodel = "okay_nabu, alexa"\n')
    wakes = [e.as_dict() for e in events]
    assert [(w["type"], w["wake_word"], w["phrase"]) for w in wakes] == [
        ("wake", "okay_nabu", "Okay Nabu"),
        ("wake", "alexa", "Alexa"),
    ]
    assert sorted({j.tag[0] for j in sched.submitted if j.kind.name == "FINAL"}) == [0, 1]
    assert pipeline.stats.wakes == 2


def test_word_lists_in_the_config_and_preflight_checks_every_model(tmp_path):
    c = parse_config(
        '[wake]\nenabled = true\nmodel = "okay_nabu, hey_jarvis"\n'
        '[[streams]]\nname = "a"\ndevice = "x"\n[[streams]]\nname = "b"\ndevice = "y"\nwake = "alexa,hey_mycroft"\n'
    )
    assert [m.name for m in wake_params(c, "a").models] == ["okay_nabu", "hey_jarvis"]
    assert [m.name for m in wake_params(c, "b").models] == ["alexa", "hey_mycroft"]
    with pytest.raises(
        ConfigError, match=r'^<config>: wake.model = "okay_nabu, okay_nabu": names okay_nabu more than once'
    ):
        parse_config('[wake]\nmodel = "okay_nabu, okay_nabu"\n')
    with pytest.raises(ConfigError, match=r'^<config>: streams\[0\].wake = "alexa,,hey_jarvis": an empty model name'):
        parse_config('[[streams]]\nname = "a"\ndevice = "x"\nwake = "alexa,,hey_jarvis"\n')
    with pytest.raises(ConfigError, match=r'^<config>: wake.model = "alexa, siri": "siri" is not a shipped model'):
        parse_config('[wake]\nmodel = "alexa, siri"\n')
    # The second word's manifest is missing: check-config, start and reload refuse it by name.
    missing = tmp_path / "mine.json"
    bad = parse_config(f'[[streams]]\nname = "a"\ndevice = "x"\nwake = "alexa, {missing}"\n')
    with pytest.raises(
        ConfigError, match=rf'^<config>: streams\[0\].wake = "{missing}": manifest {missing} does not exist'
    ):
        check_runnable(bad)


def test_the_detector_rests_on_silence_and_still_hears_the_word_after_it():
    """A minute of a quiet room, then the word: the detector heard almost none of the minute and
    fired on the word, as the one that heard every frame did."""
    room = ac.at_dbfs(ac.noise("pink", 60 * 16000, seed=2), -60)
    word = speech(WAKE, speed=150)
    audio = np.concatenate([room, word + ac.at_dbfs(ac.noise("pink", len(word), seed=3), -60), room[:32000]])
    for skip in ("true", "false"):
        pipeline, _, events = _offline(audio, f"[wake]\nenabled = true\nskip_silence = {skip}\n")
        assert [e.as_dict()["wake_word"] for e in events] == ["okay_nabu"], skip
        skipped = pipeline.stats.wake_frames_skipped
        assert skipped > 0.95 * 3000 if skip == "true" else skipped == 0, skipped


def test_silence_skip_rests_after_the_hangover_and_replays_the_last_frames():
    s = SilenceSkip(hangover_frames=3, replay_frames=2)
    f = [np.full(320, i, dtype=np.int16) for i in range(10)]
    assert [len(s.frames(f[i], speech=False)) for i in range(6)] == [1, 1, 1, 0, 0, 0]  # rests from the 4th
    assert s.skipped == 1  # f[3] fell out of the 2 held frames
    out = s.frames(f[6], speech=True)
    assert [int(x[0]) for x in out] == [4, 5, 6]  # the last two held, then this one
    assert len(s.frames(f[7], speech=False)) == 1  # the hangover starts again
