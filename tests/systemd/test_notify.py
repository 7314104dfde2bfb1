"""The real daemon, run as systemd would run it, talks to a real NOTIFY_SOCKET datagram socket.

Audio comes through a real ALSA `type file` PCM reading a FIFO that the test paces in real time.
"""

import signal
import time

import pytest

from tests.systemd.helpers import PacedMic, has, start_daemon, stop

CONFIG = """
[audio]
device = "vx_fifo"
[service]
stop_timeout_s = 2.0
capture_stall_s = 1.0
"""


@pytest.fixture
def mic(alsa_dir):
    holder = {}
    yield holder
    if "mic" in holder:
        holder["mic"].close()


def test_ready_only_after_audio_then_status_watchdog_stopping(tmp_path, alsa_dir, notify, mic):
    cfg = tmp_path / "config.toml"
    cfg.write_text(CONFIG)
    mic["mic"] = PacedMic(alsa_dir / "mic.fifo", feeding=False)
    p = start_daemon(["--config", str(cfg)], notify, tmp_path, watchdog_s=1.0)
    try:
        # The device is open but no audio has come yet: STATUS says so, and no READY.
        starting = notify.wait_for(has("STATUS", "starting"))
        assert "waiting for first audio from mic" in starting.fields["STATUS"]
        time.sleep(1.0)  # a sleep on purpose: nothing may come in this second (no READY before audio)
        assert "READY" not in "".join(notify.kinds())
        fed_at = time.monotonic()
        mic["mic"].resume()
        ready = notify.wait_for(has("READY", "1"), timeout=10)
        assert ready.t > fed_at
        assert "1 stream: mic running" in ready.fields["STATUS"]
        ping = notify.wait_for(has("WATCHDOG", "1"), timeout=3)
        notify.wait_for(has("WATCHDOG", "1"), timeout=3)
        assert ping.pid == p.pid  # systemd would accept it (no WATCHDOG_PID given, the main pid pings)
        sent_at = time.monotonic()
        p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=10)
        took = time.monotonic() - sent_at
    finally:
        stop(p)
    assert rc == 0
    assert took < 2.0 + 1.5, f"shutdown took {took:.1f} s, bound is service.stop_timeout_s = 2.0"
    kinds = notify.kinds()
    assert kinds[0] == "STATUS"
    assert kinds[-1] == "STOPPING+STATUS"
    ready_i = kinds.index("READY+STATUS")
    assert "WATCHDOG" in kinds[ready_i:]
    assert "WATCHDOG" not in kinds[:ready_i], "an early ping would arm systemd's watchdog during start-up"
    assert all(m.pid == p.pid for m in notify.messages)
    assert "Traceback" not in (tmp_path / "stderr.log").read_text()


def test_sigterm_exits_0_within_bound_while_capture_hangs(tmp_path, alsa_dir, notify, mic):
    cfg = tmp_path / "config.toml"
    cfg.write_text(CONFIG)
    mic["mic"] = PacedMic(alsa_dir / "mic.fifo")
    p = start_daemon(["--config", str(cfg)], notify, tmp_path)
    try:
        notify.wait_for(has("READY", "1"))
        mic["mic"].pause()  # the capture thread now blocks inside an ALSA read that never returns
        time.sleep(0.5)
        sent_at = time.monotonic()
        p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=10)
        took = time.monotonic() - sent_at
    finally:
        stop(p)
    assert rc == 0
    assert took < 2.0 + 1.5
    assert "STOPPING" in notify.kinds()[-1]
