"""scripts/bench/stream.py removes its /tmp/voxnode-bench-* folder (the PCMs, FIFOs and the streams'
test audio) whichever way it ends: 66 of them had piled up on stop 38's host, one per run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from tests.alsa_env import ROOT
from tests.helpers import wait_until
from voxnode.process_stop import stop_process


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_run_removes_its_folder(tmp_path, sig):
    """Ctrl-C or SIGTERM while the streams' audio is made (the first thing done in the folder)."""
    cmd = [sys.executable, "-m", "scripts.bench.stream", "--streams", "1", "--speak-s", "5", "--idle-s", "3"]
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    # SIGINT as a foreground job has it: where pytest runs as a script's background job (`pytest ... &`)
    # it is ignored and the child inherits that (Python then takes no Ctrl-C).
    p = subprocess.Popen(
        cmd,
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert wait_until(lambda: any(tmp_path.glob("voxnode-bench-*")), timeout=30), "no folder made"
        p.send_signal(sig)
        _, err = p.communicate(timeout=30)
    finally:
        stop_process(p, 5)
    assert p.returncode != 0 and "voxnode-bench-" not in err, err  # the cleanup itself did not fail
    assert list(tmp_path.glob("voxnode-bench-*")) == []  # before: the folder and its audio stayed
