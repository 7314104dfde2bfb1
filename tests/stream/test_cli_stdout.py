"""`voxnode run --stdout`: transcripts as one JSON object per line, through the real CLI and engine."""

import json
import subprocess
import wave
from datetime import datetime

import numpy as np
import pytest

from scripts.bench import audio_corpus as ac
from tests.stream.test_pipeline_alsa import UNPACED_TOML, wer

pytestmark = pytest.mark.skipif(not ac.have_espeak(), reason="needs espeak-ng and sox (make deps-test)")


def test_run_stdout_prints_partial_and_final_json_lines(tmp_path, voxnode_cmd):
    # Long enough (4.8 s), and partials not spaced by their decode time, for partials on a loaded machine
    # (tests/stream/test_pipeline_alsa.py, unpaced).
    text = "what time does the bakery on the corner close today and is it open on sunday"
    audio = np.concatenate([ac.silence(0.5), ac.at_dbfs(ac.tts(text, "en-us"), -25), ac.silence(1.0)])
    audio = audio + ac.at_dbfs(ac.noise("pink", len(audio), seed=7), -70)  # a quiet room's tone, as a microphone hears
    wav = tmp_path / "speech.wav"
    with wave.open(str(wav), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(ac.to_pcm16(audio))
    config = tmp_path / "c.toml"
    config.write_text(UNPACED_TOML)
    p = subprocess.run(
        voxnode_cmd + ["run", "--config", str(config), "--file", str(wav), "--stdout"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    events = [json.loads(line) for line in p.stdout.splitlines()]  # every line is one JSON object
    speech = [e for e in events if e["type"] in ("partial", "final")]
    finals = [e for e in speech if e["type"] == "final"]
    assert len(finals) == 1, speech
    f = finals[0]
    assert wer(text, f["text"]) <= 0.2, f
    common = {"type", "stream", "id", "text", "start", "end", "latency_ms", "confidence", "language"}
    # A final is durable with stdout alone: it carries its delivery `seq` and the model that made it, and
    # how far above the room's noise its speech reached (a clear voice in a quiet room: far above).
    final_keys = common | {"seq", "model", "speech_snr_db"}
    assert set(f) == final_keys and f["seq"] == 1 and f["model"] == "whisper-tiny.en", f
    assert f["speech_snr_db"] > 30.0, f
    for e in speech:
        assert set(e) == (common if e["type"] == "partial" else final_keys)
        assert e["stream"] == "mic" and e["id"] == f["id"] and e["language"] == "en"  # tiny.en
        start, end = datetime.fromisoformat(e["start"]), datetime.fromisoformat(e["end"])
        assert start.tzinfo is not None and start < end
        assert isinstance(e["latency_ms"], (int, float)) and isinstance(e["confidence"], (int, float))
    # The speech in the file lasts about as long as the clip.
    dur = (datetime.fromisoformat(f["end"]) - datetime.fromisoformat(f["start"])).total_seconds()
    assert abs(dur - len(ac.tts(text, "en-us")) / 16000) < 0.6, dur
    assert any(e["type"] == "partial" for e in speech)
