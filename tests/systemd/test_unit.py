"""The shipped unit file: systemd-analyze accepts it silently, its security score, and that it agrees
with the daemon's defaults and the install layout."""

import re
import shutil
import subprocess
import sys

import pytest

from tests.alsa_env import ROOT
from voxnode.config import Config

UNIT = ROOT / "systemd" / "voxnode.service"
INSTALLED_EXEC = "/opt/voxnode/venv/bin/voxnode"

pytestmark = pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed")


def _unit_for_verify(tmp_path, text=None):
    """verify fails unless ExecStart's binary exists, and /opt/voxnode is not installed on a test
    machine: point it at this interpreter running the same command (`python -m voxnode run`)."""
    text = text if text is not None else UNIT.read_text()
    assert f"ExecStart={INSTALLED_EXEC} run\n" in text
    text = text.replace(f"ExecStart={INSTALLED_EXEC} run", f"ExecStart={sys.executable} -m voxnode run")
    path = tmp_path / "voxnode.service"
    path.write_text(text)
    return path


def _verify(path):
    return subprocess.run(
        ["systemd-analyze", "verify", str(path)], capture_output=True, text=True, cwd=path.parent, timeout=30
    )


def test_verify_prints_nothing(tmp_path):
    p = _verify(_unit_for_verify(tmp_path))
    # rc is 0 for most mistakes (they are only printed), so the output must be empty.
    assert (p.returncode, p.stdout, p.stderr) == (0, "", "")


def test_verify_would_catch_a_mistake(tmp_path):
    # Guards the test above: a typo'd value must show up in the output it asserts empty.
    text = UNIT.read_text().replace("WatchdogSec=30s", "WatchdogSec=thirty")
    p = _verify(_unit_for_verify(tmp_path, text))
    assert "thirty" in p.stderr


def test_security_exposure_at_most_2_5():
    # --threshold is the score x 10 (0..100): exit status 1 when the exposure is above it.
    p = subprocess.run(
        ["systemd-analyze", "security", "--offline=true", "--threshold=25", str(UNIT)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    score = float(re.search(r"Overall exposure level for voxnode.service: (\d+\.\d)", p.stdout).group(1))
    assert p.returncode == 0 and score <= 2.5, p.stdout[-2000:]


def _settings():
    out = {}
    for line in UNIT.read_text().splitlines():
        if "=" in line and not line.startswith("#"):
            k, v = line.split("=", 1)
            out.setdefault(k, v)
    return out


def _seconds(v):
    return float(v.rstrip("s"))


def test_unit_agrees_with_daemon_defaults():
    s, svc = _settings(), Config().service
    assert s["Type"] == "notify" and s["NotifyAccess"] == "main"
    assert s["Environment"] == "PYTHONMALLOC=malloc"
    # systemd must not SIGKILL a shutdown that is still within the daemon's own bound.
    assert _seconds(s["TimeoutStopSec"]) >= svc.stop_timeout_s + 5
    # A stall must be detected well before systemd's patience runs out, and a slow decode must not
    # be mistaken for one: worker_stall_s is the daemon's limit, WatchdogSec only needs pings.
    assert _seconds(s["WatchdogSec"]) >= 2 * svc.capture_stall_s
    assert s["ExecReload"] == "/bin/kill -HUP $MAINPID"
