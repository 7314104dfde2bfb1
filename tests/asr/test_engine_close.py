"""An engine's model file (the decoder's, read with pread for the token embedding) is closed by whoever
loaded the engine: `close()` (or `with`) for a caller's own, Recognition.stop for the daemon's."""

from __future__ import annotations

import os
import time
from collections import Counter

import numpy as np
import pytest

from voxnode.asr import default_model_dir
from voxnode.asr.whisper.engine import WhisperEngine
from voxnode.config import Config
from voxnode.stream.recognition import Recognition


def open_model_files() -> Counter[str]:
    """This process's open file descriptors on files of the default model's folder, by file name.
    The interpreters hold theirs (their mappings) until they are freed; the engine's own pread file
    is the one close() closes."""
    folder = str(default_model_dir())
    out: Counter[str] = Counter()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed since the listing (listdir's own fd)
            continue
        if target.startswith(folder + os.sep):
            out[os.path.basename(target)] += 1
    return out


PREAD = Counter({"decoder.int8.tflite": 1})  # one engine's pread file: what close() closes
SPEECHLIKE = 0.1 * np.sin(np.arange(16000, dtype=np.float32) / 5)


def test_close_closes_the_decoders_model_file():
    engine = WhisperEngine.load(default_model_dir(), 1)
    loaded = open_model_files()
    assert engine.close() is True
    assert loaded - open_model_files() == PREAD, (loaded, open_model_files())
    with pytest.raises(RuntimeError, match="engine closed"):  # one clear error, not a ValueError on the file
        engine.transcribe(SPEECHLIKE)


def test_close_leaves_a_running_decode_its_file():
    with WhisperEngine.load(default_model_dir(), 1) as engine:
        loaded = open_model_files()
        with engine._lock:  # as a decode still running past the stop deadline holds it
            assert engine.close() is False
        assert open_model_files() == loaded
    assert loaded - open_model_files() == PREAD  # `with` closed it once the lock was free


def test_the_daemons_recognition_closes_and_forgets_the_engines_it_loaded():
    config = Config()
    recognition = Recognition(config, lambda _event: None)
    recognition.start()
    started = open_model_files()
    model = recognition.engine_info()
    recognition.stop(time.monotonic() + 5)
    workers = config.stream.decode_workers
    assert started - open_model_files() == Counter({"decoder.int8.tflite": workers}), (started, open_model_files())
    assert recognition.recognizers == []  # no closed engine left to decode with
    assert model is not None and recognition.engine_info() is model  # finals stored after the stop name it


def test_recognition_leaves_engines_it_was_given_to_their_owner(engine):
    recognition = Recognition(Config(), lambda _event: None, [engine])
    recognition.start()
    recognition.stop(time.monotonic() + 5)
    engine.transcribe(SPEECHLIKE)  # its file still open: no ValueError


def test_a_start_that_fails_closes_and_forgets_the_engines_it_loaded(monkeypatch):
    def broken_warm_up(self):
        raise RuntimeError("warm-up failed")

    before = open_model_files()
    monkeypatch.setattr(WhisperEngine, "warm_up", broken_warm_up)
    recognition = Recognition(Config(), lambda _event: None)
    with pytest.raises(RuntimeError, match="warm-up failed"):
        recognition.start()
    assert open_model_files() - before == Counter(), "the loaded engines' files were left open"
    assert recognition.recognizers == []  # a later start loads anew, never decodes with closed engines
