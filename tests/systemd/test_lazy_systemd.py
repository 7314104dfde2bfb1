"""Commands other than `run` work where systemd-python cannot be imported.

A node may run `voxnode transcribe` in a plain container or (as `make test-arm64` does) under
qemu-user with a minimal sysroot: logging goes to stderr there, so systemd-python must not be
needed. The CLI runs in a subprocess whose `systemd` package is blocked (None in sys.modules makes
every `import systemd...` raise ImportError), the way a machine without the package behaves.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.alsa_env import ROOT
from tests.asr.conftest import pocketsphinx_utterances
from voxnode.asr.wer import wer

WITHOUT_SYSTEMD = (
    "import sys; sys.modules['systemd'] = None; from voxnode.cli import main; sys.exit(main(sys.argv[1:]))"
)


def _voxnode_without_systemd(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("INVOCATION_ID", "JOURNAL_STREAM", "NOTIFY_SOCKET")}
    env["PYTHONPATH"] = str(ROOT / "daemon")
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_SYSTEMD, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        cwd=ROOT,
    )


def test_blocking_really_blocks():
    p = subprocess.run(
        [sys.executable, "-c", "import sys; sys.modules['systemd'] = None; from systemd import journal"],
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert p.returncode != 0 and "ModuleNotFoundError" in p.stderr


def test_transcribe_without_systemd_python(tmp_path):
    wav, ref = pocketsphinx_utterances()[4]  # "he might even have been made amiable himself"
    config = tmp_path / "config.toml"
    config.write_text('[log]\nlevel = "info"\n')
    p = _voxnode_without_systemd("transcribe", "--config", str(config), "--json", str(wav))
    assert p.returncode == 0, p.stderr
    obj = json.loads(p.stdout)
    assert wer(ref, obj["text"]) < 0.2, obj["text"]
    assert "speech model loaded" in p.stderr  # the log line reached stderr through the plain handler


def test_check_config_and_devices_without_systemd_python():
    p = _voxnode_without_systemd("check-config", "--reference", timeout=30)
    assert p.returncode == 0, p.stderr
    assert "[asr]" in p.stdout
    p = _voxnode_without_systemd("devices", "--no-probe", timeout=30)
    assert p.returncode == 0, p.stderr
