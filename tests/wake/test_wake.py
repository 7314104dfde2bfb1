"""Wake word: the detector on real audio, the gate in the pipeline, and the whole path through real ALSA.

The spoken wake words are espeak-ng's (no recording of "okay nabu" ships in Debian); the sentences
around them too. The detector and the recogniser are the real ones.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess

import numpy as np
import pytest

from scripts.bench import audio_corpus as ac
from tests.stream.test_pipeline_alsa import run_daemon, wer
from voxnode.config import Config, parse_config
from voxnode.config.audio import StreamConfig
from voxnode.config.wake import SHIPPED_CUTOFFS, WakeConfig
from voxnode.errors import ConfigError
from voxnode.stream.params import wake_params
from voxnode.wake.detector import WakeDetector
from voxnode.wake.models import load_wake_model

pytestmark = pytest.mark.skipif(not ac.have_espeak(), reason="needs espeak-ng and sox (make deps-test)")

WAKE = "okay nabu"
BEFORE = "please open the garage door"
COMMAND = "turn on the kitchen lights"
AFTER = "play some music in the living room"


def speech(text: str, voice: str = "en-us", dbfs: float = -25.0, speed: int = 160) -> np.ndarray:
    return ac.at_dbfs(ac.tts(text, voice, speed), dbfs)


def detections(model: str, audio: np.ndarray, refractory_ms: int = 2000) -> list[float]:
    """Seconds into `audio` at which the detector fired, fed 20 ms at a time as from a microphone."""
    d = WakeDetector(load_wake_model(model), refractory_ms)
    pcm = np.clip(np.round(audio), -32768, 32767).astype(np.int16)
    return [i / ac.RATE for i in range(0, len(pcm) - 319, 320) if d.process(pcm[i : i + 320]) is not None]


def test_detector_hears_its_word_once_and_not_sentences_without_it():
    word = np.concatenate([ac.silence(0.5), speech(WAKE, speed=150), ac.silence(1.5)])
    hits = detections("okay_nabu", word)
    assert len(hits) == 1, hits  # once: the refractory period keeps one word one detection
    assert 0.5 < hits[0] < 2.2
    others = np.concatenate([speech(s, v) for s, v in ((BEFORE, "en-us"), (COMMAND, "en-gb"), (AFTER, "en-us+f3"))])
    assert detections("okay_nabu", others) == []
    assert detections("alexa", np.concatenate([ac.silence(0.3), speech("alexa"), ac.silence(1.0)]))


def test_models_by_name_by_path_and_bad_ones(tmp_path):
    m = load_wake_model("hey_jarvis")
    assert (m.name, m.phrase, m.window) == ("hey_jarvis", "Hey Jarvis", 5) and m.cutoff == m.manifest_cutoff == 0.97
    assert load_wake_model(str(m.tflite.with_suffix(".json")), threshold=0.5).cutoff == 0.5  # a user path
    # voxnode's own cutoffs for the shipped models (chosen on real voices), unless wake.threshold says
    alexa = load_wake_model("alexa")
    assert (alexa.cutoff, alexa.manifest_cutoff) == (SHIPPED_CUTOFFS["alexa"], 0.9)
    assert load_wake_model("alexa", threshold=0.6).cutoff == 0.6
    # The same model by its manifest's path is a user's model: the manifest's cutoff.
    assert load_wake_model(str(alexa.tflite.with_suffix(".json"))).cutoff == 0.9
    with pytest.raises(ConfigError, match=r'wake.model = "hey_siri": not a shipped model'):
        load_wake_model("hey_siri")
    with pytest.raises(ConfigError, match="does not exist"):
        load_wake_model(str(tmp_path / "mine.json"))
    (tmp_path / "bad.json").write_text('{"wake_word": "x"}')
    with pytest.raises(ConfigError, match="not a microWakeWord manifest"):
        load_wake_model(str(tmp_path / "bad.json"))


MANIFEST = (  # a manifest's keys, without its braces
    '"wake_word": "Hey Box", "model": "box.tflite", "micro": {"probability_cutoff": 0.9, "sliding_window_size": 5}'
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[1, 2]", "is not a microWakeWord manifest (not a JSON object)"),
        ('"box"', "is not a microWakeWord manifest (not a JSON object)"),
        ("{" + MANIFEST + ', "trained_languages": 5}', "trained_languages must be a list of language codes"),
        ("{" + MANIFEST + ', "trained_languages": ["en", 5]}', "trained_languages must be a list of language codes"),
    ],
)
def test_a_malformed_manifest_is_one_line_naming_the_key(tmp_path, capsys, text, expected):
    """Before: `trained_languages` that is not a list was a TypeError traceback from check-config and run."""
    from voxnode.cli import main

    manifest = tmp_path / "box.json"
    manifest.write_text(text)
    (tmp_path / "box.tflite").write_bytes(b"")
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[wake]\nenabled = true\nmodel = "{manifest}"\n')
    assert main(["check-config", "--config", str(cfg)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f'voxnode: error: {cfg}: wake.model = "{manifest}": {manifest}') and "\n" not in err, err
    assert expected in err, err
    (tmp_path / "box.json").write_text("{" + MANIFEST + ', "trained_languages": ["en", "de"]}')
    assert load_wake_model(str(manifest)).languages == ("en", "de")


@pytest.mark.parametrize("command", ["check-config", "run"])
def test_a_manifest_that_is_a_fifo_is_one_line_not_a_hang(tmp_path, voxnode_cmd, command):
    """Before: check-config and run waited in read_text for a writer that never came (SIGTERM included).
    The config file's own guard (issue 27, voxnode.regular_file) reads the manifest now."""
    from voxnode.demo import bundled_clip

    args = ["check-config"] if command == "check-config" else ["run", "--file", str(bundled_clip()), "--duration", "1"]
    manifest = tmp_path / "box.json"
    os.mkfifo(manifest)
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[wake]\nenabled = true\nmodel = "{manifest}"\n')
    p = subprocess.run(
        [*voxnode_cmd, *args, "--config", str(cfg)], capture_output=True, text=True, timeout=30
    )  # a hang fails here, as TimeoutExpired
    line = (
        f'voxnode: error: {cfg}: wake.model = "{manifest}": manifest {manifest} is a FIFO (named pipe), '
        "not a regular file"
    )
    assert p.returncode == 1 and p.stderr.strip().splitlines()[-1] == line, p.stderr
    assert "Traceback" not in p.stderr


def test_stream_override_and_config_keys():
    c = parse_config(
        '[wake]\nenabled = true\n[[streams]]\nname = "a"\ndevice = "x"\n'
        '[[streams]]\nname = "b"\ndevice = "y"\nwake = "off"\n[[streams]]\nname = "c"\ndevice = "z"\nwake = "alexa"\n'
    )
    assert wake_params(c, "a").models[0].name == "okay_nabu"
    assert wake_params(c, "b") is None
    assert wake_params(c, "c").models[0].name == "alexa"
    off = dataclasses.replace(c, wake=WakeConfig(enabled=False))
    assert wake_params(off, "a") is None and wake_params(off, "c").models[0].name == "alexa"
    bad = dataclasses.replace(c, streams=(StreamConfig(name="a", device="x", wake="nope.json"),))
    with pytest.raises(ConfigError, match=r'streams\[0\].wake = "nope.json": manifest nope.json does not exist'):
        wake_params(bad, "a")
    with pytest.raises(ConfigError, match=r'^<config>: streams\[1\].wake = "hey_siri": not a shipped model'):
        parse_config(
            '[[streams]]\nname = "a"\ndevice = "x"\n[[streams]]\nname = "b"\ndevice = "y"\nwake = "hey_siri"\n'
        )
    with pytest.raises(ConfigError, match=r'^<config>: wake.model = "computer": not a shipped model'):
        parse_config('[wake]\nmodel = "computer"\n')


def test_through_real_alsa_only_what_follows_the_wake_word_is_transcribed(alsa_dir, engine):
    """A sentence, the wake word, a command, another sentence: one wake event, one final (the
    command, carrying the wake word), and no partial or final with a word of the other sentences."""
    noise = lambda n: ac.at_dbfs(ac.noise("pink", n, seed=3), -60)  # noqa: E731
    clean = np.concatenate(
        [
            ac.silence(0.5),
            speech(BEFORE),
            ac.silence(1.5),
            speech(WAKE, speed=150),
            ac.silence(0.6),
            speech(COMMAND),
            ac.silence(1.5),
            speech(AFTER, "en-gb"),
            ac.silence(1.5),
        ]
    )
    audio = clean + noise(len(clean))
    config = parse_config("[wake]\nenabled = true\n")
    sink_events, stats, _ = run_daemon(alsa_dir, audio, engine, config, all_events=True)
    wakes = [e for e in sink_events if e["type"] == "wake"]
    speech_events = [e for e in sink_events if e["type"] in ("partial", "final")]
    finals = [e for e in speech_events if e["type"] == "final"]
    assert len(wakes) == 1, wakes
    assert wakes[0]["wake_word"] == "okay_nabu" and wakes[0]["phrase"] == "Okay Nabu"
    assert len(finals) == 1, speech_events
    assert wer(COMMAND, finals[0]["text"]) <= 0.2, finals
    assert all(e["wake_word"] == "okay_nabu" for e in speech_events)
    heard = " ".join(e["text"].lower() for e in speech_events)
    for word in ("garage", "door", "music", "living", "room", "nabu"):
        assert word not in heard, speech_events
    assert stats["streams"]["mic"]["wakes"] == 1


def test_without_the_wake_word_nothing_is_transcribed_and_listening_times_out(alsa_dir, engine):
    """Sentences alone: nothing reaches the recogniser. The wake word followed by silence longer than
    listen_timeout_ms: the gate closes, so the sentence after it is not transcribed either."""
    clean = np.concatenate(
        [
            ac.silence(0.5),
            speech(BEFORE),
            ac.silence(1.0),
            speech(WAKE, speed=150),
            ac.silence(2.0),
            speech(AFTER, "en-gb"),
            ac.silence(1.2),
        ]
    )
    config = parse_config("[wake]\nenabled = true\nlisten_timeout_ms = 1000\n")
    events, stats, _ = run_daemon(alsa_dir, clean, engine, config, all_events=True)
    assert [e["type"] for e in events] == ["wake"], events
    assert stats["scheduler"]["submitted"] == {"FINAL": 0, "SPECULATIVE": 0, "PARTIAL": 0, "WAKE": 0}
    assert stats["streams"]["mic"]["wake_timeouts"] == 1


def test_off_by_default():
    assert Config().wake.enabled is False and wake_params(Config(), "mic") is None


def _offline(audio: np.ndarray, config_text: str, before=None, each=None):
    """The real front-end, gate and segmenter, frames fed as fast as they go; the scheduler records
    the jobs (tests/stream/test_pipeline_paths.FakeScheduler). `before(pipeline)` runs before the
    first frame, `each(pipeline, k)` before frame k."""
    from tests.stream.test_pipeline_paths import FakeScheduler
    from voxnode.stream.params import pipeline_params
    from voxnode.stream.pipeline import StreamPipeline
    from voxnode.stream.wake_gate import WakeGate

    config = parse_config(config_text)
    sched, events = FakeScheduler(), []
    pipeline = StreamPipeline(
        "mic", pipeline_params(config), sched, events.append, wake=WakeGate(wake_params(config, "mic"))
    )
    pcm = np.clip(np.round(audio), -32768, 32767).astype(np.int16)
    if before is not None:
        before(pipeline)
    for k in range(len(pcm) // 320):
        if each is not None:
            each(pipeline, k)
        t = k * 0.02
        pipeline.feed(pcm[k * 320 : (k + 1) * 320], k, t, 1_700_000_000.0 + t)
    pipeline.flush()
    return pipeline, sched, events


def test_one_wake_word_opens_one_utterance_even_a_long_one_cut_at_its_maximum():
    talk = np.concatenate([speech(s) for s in (COMMAND, BEFORE, AFTER, COMMAND, BEFORE)])  # ~9 s, no pause
    audio = np.concatenate([ac.silence(0.5), speech(WAKE, speed=150), ac.silence(0.5), talk, ac.silence(1.0)])
    pipeline, sched, events = _offline(audio, "[wake]\nenabled = true\n[stream]\nmax_utterance_ms = 3000\n")
    assert [e.as_dict()["type"] for e in events] == ["wake"]
    assert {j.tag[0] for j in sched.submitted} == {0}, [(j.kind, j.tag) for j in sched.submitted]  # the first part only
    assert pipeline.wake.state.value == "closed" and pipeline.stats.discarded >= 1  # the rest was dropped
    assert max(j.audio.size for j in sched.submitted) <= 3.0 * 16000


def test_a_click_after_the_wake_word_does_not_end_listening():
    click = ac.at_dbfs(ac.noise("white", 1600, seed=1), -20)  # 100 ms: too short to be an utterance
    audio = np.concatenate(
        [
            ac.silence(0.5),
            speech(WAKE, speed=150),
            ac.silence(0.8),
            click,
            ac.silence(1.0),
            speech(COMMAND),
            ac.silence(1.0),
        ]
    )
    pipeline, sched, events = _offline(audio, '[wake]\nenabled = true\n[vad]\nengine = "spectral"\n')
    assert [e.as_dict()["type"] for e in events] == ["wake"]
    assert pipeline.stats.discarded >= 1 and pipeline.stats.wake_timeouts == 0
    decoded = [j for j in sched.submitted if j.audio.size > 1.0 * 16000]
    assert decoded, [(j.kind, j.audio.size) for j in sched.submitted]  # the command went to the recogniser
