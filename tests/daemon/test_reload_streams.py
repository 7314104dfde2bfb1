"""Reload inside the process: what can fail is done before any stream stops, and a stream that still
cannot start is retried while the others run (issue 27)."""

from __future__ import annotations

import logging
import threading

import pytest

from tests.helpers import wait_until
from voxnode.config import parse_config
from voxnode.daemon import Daemon, RunOptions

BASE = '[audio]\nretry_initial_s = 0.1\nretry_max_s = 1.0\n[[streams]]\nname = "a"\ndevice = "vx_late"\n'


@pytest.fixture(scope="module")
def engine():
    from voxnode.asr.backends import load_recognizer
    from voxnode.config.asr import AsrConfig

    with load_recognizer(AsrConfig()) as engine:
        yield engine


class Flaky(Daemon):
    """A daemon whose capture for stream "b" cannot be made the first `fails` times (a fault no
    config check can see: the stream is retried, the others keep running)."""

    fails = 3

    def _make_source(self, stream):
        if stream.name == "b" and self.fails:
            self.fails -= 1
            raise OSError("Too many open files" if self.fails else "No space left on device")
        return super()._make_source(stream)


def run_in_thread(daemon: Daemon) -> threading.Thread:
    t = threading.Thread(target=daemon.run, daemon=True)
    t.start()
    assert wait_until(lambda: "a" in daemon.streams.names(), timeout=10)
    return t


def test_a_stream_that_cannot_start_is_retried_while_the_others_run(engine, caplog):
    daemon = Flaky(parse_config(BASE), [], RunOptions(), recognizers=[engine])
    t = run_in_thread(daemon)
    a = daemon.streams["a"]
    try:
        with caplog.at_level(logging.DEBUG, logger="voxnode.daemon"):
            daemon.reloader = lambda: parse_config(BASE + '[[streams]]\nname = "b"\ndevice = "vx_late"\n', "c.toml")
            daemon.request_reload()
            assert wait_until(lambda: "b" in daemon.snapshot()["streams"], timeout=10)
            snap = daemon.snapshot()["streams"]["b"]
            reasons = ("OSError: Too many open files", "OSError: No space left on device")  # the first or a later try's
            assert snap["state"] == "backoff" and snap["last_error"] in reasons, snap
            assert t.is_alive() and daemon.streams["a"] is a and a.worker.is_alive()  # a kept running
            started = lambda: "b" in daemon.streams.names() and daemon.streams["b"].source.is_alive()  # noqa: E731
            assert wait_until(started, timeout=10)  # retried, and its capture runs
    finally:
        daemon.request_stop()
        t.join(20)
    assert not t.is_alive()
    text = caplog.text
    assert "config reloaded: started b; kept a" in text
    tries = [(r.levelno, r.getMessage()) for r in caplog.records if "stream b cannot start" in r.getMessage()]
    # Each reason once at error level, a repeat at debug; the delay doubles either way.
    assert tries == [
        (logging.ERROR, "stream b cannot start: OSError: Too many open files; retrying in 0.1 s"),
        (logging.DEBUG, "stream b cannot start: OSError: Too many open files; retrying in 0.2 s"),
        (logging.ERROR, "stream b cannot start: OSError: No space left on device; retrying in 0.4 s"),
    ], tries
    assert "stream b started (after 3 failed tries)" in text


def test_a_wake_model_that_does_not_load_is_refused_before_the_streams_stop(engine, tmp_path, caplog):
    """A manifest and a model file that exist, but the file is no model: the checks pass, building the
    pipeline fails, and that comes before the running stream is stopped."""
    (tmp_path / "bad.tflite").write_bytes(b"not a tflite model")
    (tmp_path / "bad.json").write_text(
        '{"type": "micro", "wake_word": "Bad", "model": "bad.tflite",'
        ' "micro": {"probability_cutoff": 0.9, "sliding_window_size": 5}}'
    )
    daemon = Daemon(parse_config(BASE), [], RunOptions(), recognizers=[engine])
    t = run_in_thread(daemon)
    a = daemon.streams["a"]
    old = daemon.config
    try:
        with caplog.at_level(logging.INFO, logger="voxnode.daemon"):
            daemon.reloader = lambda: parse_config(BASE + f'wake = "{tmp_path}/bad.json"\n', "c.toml")
            daemon.request_reload()
            assert wait_until(lambda: "config reload failed" in caplog.text, timeout=10), caplog.text
        assert daemon.config is old and daemon.streams["a"] is a and a.worker.is_alive() and t.is_alive()
        # The trial pipeline did not replace it: the controls and the stats still reach the running one.
        assert daemon.streams.pipelines() == {"a": a.pipeline}
        daemon.set_playing("a", True)
        assert a.pipeline.playback.input and daemon.playing("a")
        assert list(daemon.recognition.stats()["streams"]) == ["a"]
    finally:
        daemon.request_stop()
        t.join(20)
    assert "reload failed, previous config still running" in caplog.text


def test_an_end_of_turn_model_that_does_not_start_refuses_the_reload_and_keeps_the_old_limits(
    engine, tmp_path, monkeypatch, caplog
):
    """A reload that turns the end-of-turn model on, whose installed file passes the checks (its
    SHA256SUMS line matches) but does not load: the reload is refused before any stream stops, and
    recognition keeps the old config (the decode queue's limit the reload also changed included)."""
    import hashlib

    import voxnode.models.find as find
    from voxnode.models.find import TURN_MODEL, TURN_MODEL_FILE
    from voxnode.stream.params import scheduler_params

    bad = b"not a tflite model"
    (tmp_path / TURN_MODEL).mkdir()
    (tmp_path / TURN_MODEL / TURN_MODEL_FILE).write_bytes(bad)
    (tmp_path / TURN_MODEL / "SHA256SUMS").write_text(f"{hashlib.sha256(bad).hexdigest()}  {TURN_MODEL_FILE}\n")
    roots = find.model_roots()
    monkeypatch.setattr(find, "model_roots", lambda: [tmp_path, *roots])  # found first: installed, damaged
    off = '[vad]\nend_of_turn = "off"\n' + BASE
    daemon = Daemon(parse_config(off), [], RunOptions(), recognizers=[engine])
    t = run_in_thread(daemon)
    a = daemon.streams["a"]
    old = daemon.config
    try:
        with caplog.at_level(logging.INFO, logger="voxnode.daemon"):
            on = '[vad]\nend_of_turn = "smart-turn"\n[stream]\nmax_pending_finals = 3\n' + BASE
            daemon.reloader = lambda: parse_config(on, "c.toml")
            daemon.request_reload()
            assert wait_until(lambda: "config reload failed" in caplog.text, timeout=10), caplog.text
        said = 'config reload failed, previous config still running: c.toml: vad.end_of_turn = "smart-turn": '
        assert said in caplog.text and "cannot be loaded" in caplog.text, caplog.text
        assert daemon.config is old and daemon.streams["a"] is a and a.worker.is_alive() and t.is_alive()
        assert daemon.recognition.scheduler.params == scheduler_params(old)  # max_pending_finals 64, not 3
        assert daemon.streams.pipelines() == {"a": a.pipeline}
    finally:
        daemon.request_stop()
        t.join(20)
