"""SIGHUP reloads and the watchdog, against the real daemon in a subprocess and a real NOTIFY_SOCKET."""

import signal
import time

import pytest

from tests.systemd.helpers import PacedMic, has, start_daemon, stop

STREAMS_A = """
[service]
stop_timeout_s = 2.0
capture_stall_s = 1.0
[[streams]]
name = "a"
device = "vx_fifo"
"""


@pytest.fixture
def mic(alsa_dir):
    m = PacedMic(alsa_dir / "mic.fifo")
    yield m
    m.close()


def _reload(p, notify, timeout=10.0):
    """SIGHUP, then the RELOADING=1 and the READY=1 that closes it; returns (reloading, ready)."""
    p.send_signal(signal.SIGHUP)
    reloading = notify.wait_for(has("RELOADING", "1"), timeout)
    ready = notify.wait_for(has("READY", "1"), timeout)
    return reloading, ready


def test_sighup_broken_config_keeps_old_running_then_good_config_applies(tmp_path, notify, mic):
    cfg = tmp_path / "config.toml"
    cfg.write_text(STREAMS_A)
    p = start_daemon(["--config", str(cfg)], notify, tmp_path, watchdog_s=1.0)
    try:
        notify.wait_for(has("READY", "1"))

        # Broken: a typo'd key. The old config keeps running and the error is reported.
        cfg.write_text(STREAMS_A + 'devise = "x"\n')
        reloading, ready = _reload(p, notify)
        usec = int(reloading.fields["MONOTONIC_USEC"])
        assert abs(usec / 1e6 - time.clock_gettime(time.CLOCK_MONOTONIC)) < 5  # same clock as systemd's
        status = ready.fields["STATUS"]
        assert "reload failed, previous config still running" in status
        assert "streams[0].devise" in status and "did you mean 'device'" in status
        assert "1 stream: a running" in status
        after_failure = time.monotonic()
        notify.wait_for(lambda m: has("WATCHDOG")(m) and m.t > after_failure + 0.6, timeout=3)
        assert p.poll() is None

        # Good: stream a unchanged (keeps running), stream b added on a device that does not exist.
        cfg.write_text(STREAMS_A + '[[streams]]\nname = "b"\ndevice = "vx_no_such_pcm"\n')
        _, ready = _reload(p, notify)
        status = ready.fields["STATUS"]
        assert status.startswith("2 streams: a running, b backoff"), status
        assert "reload failed" not in status
        # A device in reported backoff does not stop the watchdog.
        t = time.monotonic()
        notify.wait_for(lambda m: has("WATCHDOG")(m) and m.t > t + 0.6, timeout=3)

        # Removing b and changing a's channel restarts a and stops b.
        cfg.write_text(STREAMS_A + "channels = 1\n")
        _, ready = _reload(p, notify)
        assert ready.fields["STATUS"].startswith("1 stream: a running")
    finally:
        rc = stop(p)
    assert rc == 0
    log = (tmp_path / "stderr.log").read_text()
    assert "config reloaded: started b; kept a" in log
    assert "config reloaded: restarted a; stopped b" in log
    assert "Traceback" not in log


def test_stalled_capture_stops_watchdog_pings_and_they_resume(tmp_path, notify, mic):
    cfg = tmp_path / "config.toml"
    cfg.write_text(STREAMS_A)
    p = start_daemon(["--config", str(cfg)], notify, tmp_path, watchdog_s=1.0)
    try:
        notify.wait_for(has("READY", "1"))
        notify.wait_for(has("WATCHDOG", "1"), timeout=3)
        mic.pause()  # the FIFO stays open, so ALSA's read blocks: a hung device
        paused = time.monotonic()
        stalled = notify.wait_for(has("STATUS", "STALLED"), timeout=5)
        assert "a: no audio from 'vx_fifo'" in stalled.fields["STATUS"]
        time.sleep(2.5)  # a sleep on purpose: no ping may come in it (a live pipeline pings every 0.5 s)
        # capture_stall_s (1 s) after the last frame, plus a tick and some scheduling slack.
        late_pings = [m for m in notify.messages if "WATCHDOG" in m.fields and m.t > paused + 1.6]
        assert late_pings == []
        mic.resume()
        resumed = notify.wait_for(has("WATCHDOG", "1"), timeout=3)
        assert resumed.t > paused + 2.5
    finally:
        rc = stop(p)
    assert rc == 0
    log = (tmp_path / "stderr.log").read_text()
    assert "pipeline stalled (a: no audio from 'vx_fifo'" in log
    assert "pipeline alive again" in log
