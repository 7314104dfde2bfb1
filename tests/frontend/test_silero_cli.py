"""`vad.engine = "silero"` through the real CLI, daemon and Whisper engine: a recording in
continuous pink noise comes out as one final with the right words."""

import json
import subprocess
import wave

import numpy as np
import pytest

from scripts.bench import audio_corpus as ac
from scripts.bench import speech_corpus as sc
from voxnode.asr.wer import wer

LIBRIVOX = [u for u in sc.pocketsphinx() if u.name.startswith("librivox/")]


@pytest.mark.skipif(not LIBRIVOX, reason="needs pocketsphinx-testdata (make deps-test)")
def test_run_with_silero_vad_in_pink_noise(tmp_path, voxnode_cmd):
    u = LIBRIVOX[0]
    clean = np.concatenate([ac.silence(2.0), ac.at_dbfs(u.audio, -26), ac.silence(2.0)])
    clean = clean[: len(clean) // ac.FRAME * ac.FRAME]
    truth = ac.label_speech(clean)
    audio = ac.mix(clean, ac.noise("pink", len(clean), seed=2), 5, truth)
    wav = tmp_path / "noisy.wav"
    with wave.open(str(wav), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(ac.to_pcm16(audio))
    cfg = tmp_path / "voxnode.toml"
    cfg.write_text('[vad]\nengine = "silero"\n')
    p = subprocess.run(
        voxnode_cmd + ["run", "--config", str(cfg), "--file", str(wav), "--stdout"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    finals = [e for e in map(json.loads, p.stdout.splitlines()) if e["type"] == "final"]
    assert len(finals) == 1, finals
    assert wer(u.text, finals[0]["text"]) <= 0.25, (u.text, finals[0]["text"])
