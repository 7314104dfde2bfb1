"""One lifecycle: the daemon starts its components in order (outputs, recognition, streams) and stops
them in reverse, so an output is up before the first transcript and still up for the last one."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from tests.helpers import wait_until
from voxnode.audio.ring import FrameRing
from voxnode.audio.source import AudioSource
from voxnode.config import Config
from voxnode.daemon import Daemon, RunOptions
from voxnode.demo import bundled_clip
from voxnode.errors import VoxnodeError
from voxnode.events import Event, TranscriptEvent
from voxnode.lifecycle import start_all, stop_all
from voxnode.outputs import base


class Output(base.Output):
    """An output with a thread, as MQTT is one; it writes down what happens to it."""

    def __init__(self, name: str, log: list[str]):
        self.name, self.log = name, log  # type: ignore[misc]  # an instance name: one class, many outputs

    @classmethod
    def from_context(cls, ctx):
        return None

    def start(self) -> None:
        self.log.append(f"{self.name} start")

    def stop(self, deadline: float) -> None:
        self.log.append(f"{self.name} stop")

    def handle(self, event: Event) -> None:
        if isinstance(event, TranscriptEvent) and event.is_final:
            self.log.append(f"{self.name} final: {event.text}")


class Broken(Output):
    def start(self) -> None:
        raise VoxnodeError("Prometheus endpoint 127.0.0.1:9464: Address already in use")


def test_outputs_are_up_before_the_first_final_and_until_the_last():
    log: list[str] = []
    daemon = Daemon(Config(), [], RunOptions(file=str(bundled_clip()), file_realtime=False))
    first, second = Output("mqtt", log), Output("prometheus", log)
    for output in (first, second):
        daemon.add_output(output)
    assert daemon.components[:2] == [first, second]
    assert daemon.components[2:] == [daemon.recognition, daemon.streams]
    assert daemon.run() == 0
    # The clip's one utterance ends with the file: its final is decoded while the daemon stops,
    # after the streams, and still reaches the output before it closes.
    assert log[:2] == ["mqtt start", "prometheus start"]
    assert log[-2:] == ["prometheus stop", "mqtt stop"]
    for name in ("mqtt", "prometheus"):  # every output sees the final once
        finals = [line for line in log if line.startswith(f"{name} final:")]
        assert len(finals) == 1 and "kitchen" in finals[0], log


def test_a_component_that_cannot_start_stops_those_started_before_it():
    log: list[str] = []
    daemon = Daemon(Config(), [], RunOptions(file=str(bundled_clip())))
    daemon.add_output(Output("mqtt", log))
    daemon.add_output(Broken("prometheus", log))
    with pytest.raises(VoxnodeError, match="Address already in use"):
        daemon.run()
    assert log == ["mqtt start", "mqtt stop"]  # the broken one is not stopped: it never started
    assert not daemon.recognition.started  # nothing after the broken one was started


def test_one_failing_stop_does_not_keep_the_others_running(caplog):
    log: list[str] = []

    class StopFails(Output):
        def stop(self, deadline: float) -> None:
            raise RuntimeError("socket already closed")

    parts = [Output("a", log), StopFails("b", log), Output("c", log)]
    start_all(parts)
    with caplog.at_level(logging.ERROR, logger="voxnode.lifecycle"):
        stop_all(parts, time.monotonic() + 1)
    assert log == ["a start", "b start", "c start", "c stop", "a stop"]
    assert "StopFails: stop failed" in caplog.text


class CaptureFails(AudioSource):
    """A capture whose start fails (a fault after the config checks: out of threads, say)."""

    def start(self) -> None:
        raise VoxnodeError("audio.device 'hw:9': cannot start its capture")


class NoCapture(Daemon):
    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.runtimes: list = []

    def _make_source(self, stream):
        return CaptureFails(stream.name, FrameRing(10))

    def _make_stream(self, stream, pipeline):
        rt = super()._make_stream(stream, pipeline)
        self.runtimes.append(rt)
        return rt


def test_a_stream_whose_capture_cannot_start_stops_its_worker():
    """Issue 25: a stream starts its worker, then its capture, through start_all; when the capture
    fails, the worker already started is stopped again, the stream is not left among the running
    ones, and the daemon's start stops what it had started."""
    daemon = NoCapture(Config(), [], RunOptions())
    with pytest.raises(VoxnodeError, match="cannot start its capture"):
        daemon.run()
    [rt] = daemon.runtimes
    # Its stop closed the ring (the capture never did): it flushes and ends. Before, it waited for ever.
    assert wait_until(lambda: not rt.worker.is_alive(), timeout=5)
    assert daemon.streams.names() == []
    # Nor is its pipeline left behind for the controls and the stats (Streams owns the pipelines).
    assert daemon.recognition.stats()["streams"] == {}
    with pytest.raises(KeyError):
        daemon.set_playing("mic", True)
    assert not [t.name for t in threading.enumerate() if t.name in ("stream-mic", "capture-mic")]
