"""Write tests/asr/data/mel_reference.npz with faster-whisper's own log-mel (an
independent numpy implementation of Whisper's features), for tests/asr/test_mel.py.

    .venv-bench/bin/python -m tests.asr.make_mel_reference   # needs faster-whisper
"""

import wave
from pathlib import Path

import numpy as np
from faster_whisper.feature_extractor import FeatureExtractor

REPO = Path(__file__).resolve().parents[2]
CLIP = Path("/usr/share/pocketsphinx/test/data/cards/005.wav")  # pocketsphinx-testdata

with wave.open(str(CLIP)) as w:
    pcm = np.frombuffer(w.readframes(w.getnframes()), "<i2")
pcm = pcm[:24000].copy()  # 1.5 s of real speech
audio = pcm.astype(np.float32) / 32768.0
fe = FeatureExtractor(feature_size=80)
np.savez_compressed(
    REPO / "tests/asr/data/mel_reference.npz",
    pcm=pcm,
    log_mel=fe(audio, padding=0).astype(np.float32),  # [80, frames]
    filters=fe.mel_filters.astype(np.float32),  # [80, 201]
)
print("wrote tests/asr/data/mel_reference.npz")
