"""A capture device whose open blocks (issue 27): a `type file` PCM whose infile is a FIFO with no
writer blocks inside snd_pcm_open, in blocking and non-blocking mode alike. Through pyalsaaudio, which
holds the GIL there, that froze the whole process until a writer came; the same race (a FifoWriter
thread not yet in its open(2) when the capture thread entered ALSA's) froze the test suite once in 56
runs. Each case runs in a child process so that a frozen process fails the test instead of hanging it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.alsa_env import ROOT, alsa_file_pcm

CHILD_TIMEOUT_S = 30  # a frozen child never finishes; a working one takes about 2 s


@pytest.fixture
def blocking_pcm(tmp_path):
    (tmp_path / "alsa").mkdir()
    fifo = tmp_path / "block.fifo"
    os.mkfifo(fifo)
    (tmp_path / "alsa" / "asoundrc").write_text(alsa_file_pcm("vx_block", fifo))
    return tmp_path, fifo


def run_child(alsa_home, fifo, then: str) -> dict:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'daemon'}"}
    try:
        p = subprocess.run(
            [sys.executable, "-m", "tests.audio.blocked_open_child", str(alsa_home), str(fifo), then],
            capture_output=True,
            text=True,
            timeout=CHILD_TIMEOUT_S,
            env=env,
            cwd=ROOT,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the process froze: no answer within {CHILD_TIMEOUT_S} s while an ALSA open blocked")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_an_open_that_blocks_holds_only_its_thread_and_is_reported(blocking_pcm):
    out = run_child(*blocking_pcm, "writer")
    # The main thread kept running while the open was blocked (about 20 sleeps of 50 ms in 1 s).
    assert out["ticks"] >= 10, out
    assert out["state"] == "backoff", out
    assert "'vx_block' has not finished opening" in out["error"] and "FIFO has no writer" in out["error"], out
    # The writer could connect (its thread got the GIL), and the same open went on to capture.
    assert out["exact"] and out["state_after"] == "running", out


def test_a_capture_blocked_in_its_open_stops_at_once(blocking_pcm):
    out = run_child(*blocking_pcm, "stop")
    assert out["ticks"] >= 10, out
    assert not out["alive"] and out["stop_s"] < 1.0, out  # the open stays blocked; the capture left it
