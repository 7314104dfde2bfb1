"""The daemons the benchmarks and tests start stop through voxnode.process_stop: one that ignores SIGTERM is
killed after the timeout and reaped. Before, WyomingDaemon.stop, MicDaemon.stop and fake_journald's run
raised subprocess.TimeoutExpired and left it running (scripts/bench/soak.py's stop, inline in its main,
had the same wait and now the same call). MicDaemon's context also closes its microphone and log when
the daemon has ended by itself."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from scripts.bench.mic_daemon import MicDaemon
from scripts.bench.wyoming_client import WyomingDaemon
from tests.systemd import fake_journald

pytestmark = pytest.mark.unit  # make check: needs only the venv (pyproject.toml markers)

TIMEOUT_S = 0.5


@pytest.fixture
def stubborn(tmp_path) -> SimpleNamespace:
    """A stand-in for `python -m voxnode run`: says what the helpers wait for, then ignores SIGTERM
    (ignored signals stay ignored across exec) and sleeps; its pid in a file."""
    pid_file = tmp_path / "pid"
    script = tmp_path / "python"
    script.write_text(
        f"#!/bin/sh\ntrap '' TERM\necho $$ > {pid_file}\necho 'speech-to-text server on' >&2\nexec sleep 120\n"
    )
    script.chmod(0o755)
    return SimpleNamespace(python=str(script), pid_file=pid_file)


def gone(pid_file: Path) -> bool:
    """The process is neither running nor a zombie: ended and reaped."""
    return not Path(f"/proc/{int(pid_file.read_text())}").exists()


def _stop_in_time(stop) -> int:
    t0 = time.monotonic()
    rc = stop()
    assert time.monotonic() - t0 < TIMEOUT_S + 5, "killed after the timeout, not waited on"
    return rc


def test_wyoming_daemon_stop_kills_and_reaps(tmp_path, stubborn):
    d = WyomingDaemon(tmp_path, python=stubborn.python)
    assert _stop_in_time(lambda: d.stop(TIMEOUT_S)) == -signal.SIGKILL
    assert gone(stubborn.pid_file) and d._log.closed


def test_mic_daemon_stop_kills_and_reaps(tmp_path, stubborn):
    d = MicDaemon(tmp_path, python=stubborn.python)
    assert _stop_in_time(lambda: d.stop(TIMEOUT_S)) == -signal.SIGKILL
    assert gone(stubborn.pid_file) and d._log.closed


def test_fake_journald_kills_and_reaps_a_command_that_ignores_sigterm(stubborn, monkeypatch):
    monkeypatch.setattr(fake_journald, "STOP_S", TIMEOUT_S)
    entries: list[dict] = []

    def journal() -> None:  # the entry `--until` waits for, once the command ignores SIGTERM
        while not stubborn.pid_file.exists():
            time.sleep(0.01)
        entries.append({"MESSAGE": "ready"})

    threading.Thread(target=journal, daemon=True).start()
    assert _stop_in_time(lambda: fake_journald.run([stubborn.python], 60, "ready", entries)) == -signal.SIGKILL
    assert gone(stubborn.pid_file)


def test_mic_daemon_closes_its_microphone_after_the_daemon_ended(tmp_path):
    """A daemon that ended by itself: leaving the context still stops the microphone's writer and closes
    the log (before, only a running daemon was stopped)."""
    script = tmp_path / "python"
    script.write_text("#!/bin/sh\necho 'speech-to-text server on' >&2\nexit 3\n")
    script.chmod(0o755)
    with MicDaemon(tmp_path, python=str(script)) as d:
        assert d.proc.wait(30) == 3
    assert d._log.closed and not d.mic._thread.is_alive()
