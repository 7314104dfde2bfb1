"""Mute through the daemon's control interface (what the MQTT `cmd` topic and the HA switch call):
a muted stream's audio never reaches the recogniser; unmuting brings transcripts back."""

from __future__ import annotations

import threading
import wave

import numpy as np
import pytest

from scripts.bench import audio_corpus as ac
from tests.stream.test_pipeline_alsa import ListSink, wer
from voxnode.config import Config
from voxnode.daemon import Daemon, RunOptions

pytestmark = pytest.mark.skipif(not ac.have_espeak(), reason="needs espeak-ng and sox (make deps-test)")

TEXT = "switch off the bedroom heater"


@pytest.fixture(scope="module")
def speech_wav(tmp_path_factory):
    audio = np.concatenate([ac.silence(0.3), ac.at_dbfs(ac.tts(TEXT, "en-us"), -25), ac.silence(1.0)])
    path = tmp_path_factory.mktemp("mute") / "speech.wav"
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(ac.to_pcm16(audio))
    return path


def _run(wav, engine, muted: bool, levels: bool = True):
    sink = ListSink()
    daemon = Daemon(Config(), [sink], RunOptions(file=str(wav), levels=levels), recognizers=[engine])
    daemon.set_muted("mic", muted)
    t = threading.Thread(target=daemon.run)
    t.start()
    t.join(60)
    assert not t.is_alive()
    return sink.events, daemon


def test_muted_stream_produces_no_transcript_and_hears_silence(speech_wav, engine):
    events, _ = _run(speech_wav, engine, muted=True)
    assert not [e for e in events if e["type"] in ("partial", "final")]
    levels = [e for e in events if e["type"] == "level"]
    assert levels and all(e["rms_dbfs"] < -100 for e in levels), levels


def test_unmuted_stream_transcribes(speech_wav, engine):
    events, daemon = _run(speech_wav, engine, muted=False, levels=False)
    finals = [e for e in events if e["type"] == "final"]
    assert len(finals) == 1 and wer(TEXT, finals[0]["text"]) <= 0.2, finals
    # Health reports the stream's real-time factor: engine time per second of its audio.
    rtf = daemon.snapshot()["streams"]["mic"]["rtf"]
    assert rtf is not None and 0 < rtf < 1.0, rtf
    assert not [e for e in events if e["type"] == "level"]  # levels only when asked for
