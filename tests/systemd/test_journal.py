"""journald logging: structured fields reach a journal socket; plain stderr outside systemd."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.alsa_env import ROOT

SINK_SNIPPET = """
import logging, os
from voxnode.config.log import LogConfig
from voxnode.logs import setup_logging
from voxnode.events import TranscriptEvent
from voxnode.outputs.stdout import LogOutput
target = setup_logging(LogConfig())
logging.getLogger("voxnode").info("logging to %s", target)
LogOutput(logging.getLogger("voxnode")).handle(
    TranscriptEvent("final", "kitchen", "kitchen-7", "turn on the light", 0.0, 1.0, 100.0, -0.2))
try:
    1 / 0
except ZeroDivisionError:
    logging.getLogger("voxnode").exception("boom")
"""


def _can_unshare() -> str | None:
    if shutil.which("unshare") is None:
        return "unshare(1) is not installed"
    p = subprocess.run(["unshare", "-m", "--propagation", "private", "true"], capture_output=True, text=True)
    if p.returncode != 0:
        return f"cannot create a mount namespace here (needs root or CAP_SYS_ADMIN): {p.stderr.strip()}"
    return None


@pytest.mark.skipif(_can_unshare() is not None, reason=str(_can_unshare()))
def test_journald_gets_structured_fields(tmp_path):
    out = tmp_path / "journal.json"
    env_daemon = [
        "env",
        "-u",
        "JOURNAL_STREAM",
        "-u",
        "NOTIFY_SOCKET",
        "INVOCATION_ID=0123456789abcdef0123456789abcdef",
    ]
    # The snippet's stderr is a file whose dev:ino goes in JOURNAL_STREAM, as systemd would set it.
    stderr_file = tmp_path / "snippet.err"
    stderr_file.touch()
    st = os.stat(stderr_file)
    snippet = ["sh", "-c", f'exec "$0" -c "$1" 2>>{stderr_file}', sys.executable, SINK_SNIPPET]
    env_snippet = ["env", "-u", "INVOCATION_ID", f"JOURNAL_STREAM={st.st_dev}:{st.st_ino}"]
    daemon = [sys.executable, "-m", "voxnode", "run", "--device", "vx_no_such_pcm"]
    cmd = [
        "unshare",
        "-m",
        "--propagation",
        "private",
        "sh",
        "-c",
        'mount -t tmpfs tmpfs /run/systemd && exec "$@"',
        "sh",
        sys.executable,
        "-m",
        "tests.systemd.fake_journald",
        str(out),
        "30",  # at most: the daemon is stopped once its first ALSA backoff entry is in
        "--until",
        "cannot open ALSA capture device",
        "--",
        *env_daemon,
        *daemon,
        "---",
        *env_snippet,
        *snippet,
    ]
    env = {**os.environ, "PYTHONMALLOC": "malloc", "PYTHONPATH": f"{ROOT}:{ROOT / 'daemon'}"}
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=90, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    result = json.loads(out.read_text())
    assert result["exit_codes"] == [0, 0]
    entries = result["entries"]

    backoff = [e for e in entries if "cannot open ALSA capture device" in e.get("MESSAGE", "")]
    assert backoff, [e.get("MESSAGE") for e in entries]
    e = backoff[0]
    assert e["STREAM"] == "mic" and e["DEVICE"] == "vx_no_such_pcm"
    assert e["PRIORITY"] == "3" and e["SYSLOG_IDENTIFIER"] == "voxnode"
    assert e["LOGGER"] == "voxnode.audio.alsa_capture" and e["CODE_FUNC"] == "_backoff"
    assert not any(k.islower() for k in e), "LogRecord attributes must not leak as fields"
    assert not e["MESSAGE"][0].isdigit(), "journald stamps the time itself"

    final = [e for e in entries if "turn on the light" in e.get("MESSAGE", "")]
    assert final and final[0]["STREAM"] == "kitchen" and final[0]["UTTERANCE_ID"] == "kitchen-7"
    assert any(e.get("MESSAGE") == "logging to journald" for e in entries)
    boom = [e for e in entries if e.get("MESSAGE", "").startswith("boom\nTraceback")]  # journalctl shows it
    assert boom and "ZeroDivisionError" in boom[0]["EXCEPTION_TEXT"]
    # Nothing went to stderr: it would reach the journal a second time, unstructured.
    assert "turn on the light" not in stderr_file.read_text()


def test_stderr_outside_systemd(tmp_path, voxnode_cmd):
    env = {k: v for k, v in os.environ.items() if k not in ("INVOCATION_ID", "JOURNAL_STREAM")}
    p = subprocess.run(
        [sys.executable, "-c", SINK_SNIPPET],
        env={**env, "PYTHONPATH": str(ROOT / "daemon")},
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert p.returncode == 0, p.stderr
    assert "logging to stderr" in p.stderr and "[kitchen] final: turn on the light" in p.stderr


def test_invocation_id_without_journald_socket_stays_on_stderr(tmp_path):
    # JournalHandler would drop every line silently with no journald listening.
    env = {**os.environ, "INVOCATION_ID": "0123", "PYTHONPATH": str(ROOT / "daemon")}
    if os.path.exists("/run/systemd/journal/socket"):
        pytest.skip("a real journald is running here")
    p = subprocess.run([sys.executable, "-c", SINK_SNIPPET], env=env, capture_output=True, text=True, timeout=20)
    assert "logging to stderr" in p.stderr
