"""tests/adapt's three TensorFlow runs in the build-time venv (a tiny `voxnode adapt`, lora_probe.py and
regularise_probe.py) start side by side when the first of them is needed, each only if a collected
test uses it; each test module's fixture then waits for its own run and asserts on it as before.

One after the other they were the suite's three slowest set-ups (2-vCPU EPYC, stop 44: 50.7 + 36.3 +
22.3 s wall for 48.4 + 34.9 + 22.1 CPU s: TensorFlow's batch-1 graphs keep about one core busy); side by
side the three took 76.3 s (tests/adapt 139 -> 101 s, load 0.9-2.6). Nothing in them is timed; each
has its own folder, process and 600 s, as before.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import wave
from pathlib import Path

import numpy as np
import pytest

from voxnode.adapt_tool import ADAPT_VENV, checkout_root, tool_env

from ..asr.conftest import pocketsphinx_utterances

ROOT = checkout_root()
HERE = Path(__file__).resolve().parent
RUN_TIMEOUT_S = 600
ADAPTED_NAME = "whisper-tiny.en+test"
# run -> (the test module whose tests use it, through the fixture named)
USERS = {
    "adapt": ("test_adapt_run.py", "adapted"),
    "lora": ("test_lora.py", "probe"),
    "regularise": ("test_regularise.py", "probe"),
}


def _write_wav(path: Path, x: np.ndarray) -> None:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(np.clip(np.round(x), -32768, 32767).astype("<i2").tobytes())


def _pink(n: int, seed: int) -> np.ndarray:
    spec = np.fft.rfft(np.random.default_rng(seed).standard_normal(n))
    f = np.arange(len(spec), dtype=float)
    f[0] = 1
    x = np.fft.irfft(spec / np.sqrt(f), n)
    return 3000 * x / np.std(x)


def _adapt_command(d: Path) -> tuple[list[str], dict[str, str]]:
    """Three real utterances (pocketsphinx-testdata's, given as the user's own) in 30 s of pink noise,
    one epoch, the cross-attention layers only: through `voxnode adapt`, as a user runs it."""
    (d / "mine.tsv").write_text("".join(f"{p}\t{t}\n" for p, t in pocketsphinx_utterances()))
    _write_wav(d / "room.wav", _pink(30 * 16000, 1))
    cmd = [sys.executable, "-m", "voxnode", "adapt", "--noise", str(d / "room.wav"), "--name", "test"]
    cmd += ["--utterances", str(d / "mine.tsv"), "--no-bundled", "--max-train", "3", "--epochs", "1"]
    cmd += ["--accumulate", "1", "--layers", "cross", "--check", "none", "--out", str(d / ADAPTED_NAME)]
    return cmd, {**os.environ, "PYTHONHASHSEED": "0"}


def _probe_command(module: str) -> tuple[list[str], dict[str, str]]:
    """`python -m MODULE` in the build-time venv (TensorFlow lives there only), from the checkout."""
    return [str(ROOT / ADAPT_VENV / "bin" / "python"), "-m", module], tool_env(ROOT)


class Run:
    """A command started in the background, its output in files (a pipe nobody reads would stall it)."""

    def __init__(self, cmd: list[str], env: dict[str, str], folder: Path):
        self.cmd, self.folder = cmd, folder
        self.deadline = time.monotonic() + RUN_TIMEOUT_S
        with open(folder / "stdout", "wb") as out, open(folder / "stderr", "wb") as err:
            self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=err)

    def result(self) -> subprocess.CompletedProcess:
        try:
            code = self.proc.wait(max(0.0, self.deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.stop()
            raise
        out, err = ((self.folder / f).read_text(errors="replace") for f in ("stdout", "stderr"))
        return subprocess.CompletedProcess(self.cmd, code, out, err)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class AdaptRuns:
    def __init__(self, tmp_path_factory: pytest.TempPathFactory):
        self._tmp = tmp_path_factory
        self.runs: dict[str, Run] = {}

    def start(self, name: str) -> Run:
        if name not in self.runs:
            folder = self._tmp.mktemp(name)
            if name == "adapt":
                cmd, env = _adapt_command(folder)
            else:
                cmd, env = _probe_command(f"tests.adapt.{name}_probe")
            self.runs[name] = Run(cmd, env, folder)
        return self.runs[name]

    def adapted(self) -> tuple[Path, subprocess.CompletedProcess]:
        """The adapted model's folder and the `voxnode adapt` run that wrote it."""
        run = self.start("adapt")
        proc = run.result()
        assert proc.returncode == 0, proc.stderr[-3000:]
        return run.folder / ADAPTED_NAME, proc

    def probe(self, name: str) -> dict:
        """What the probe printed last, as JSON; its stderr's tail is the message where it fails."""
        proc = self.start(name).result()
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def adapt_runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    runs = AdaptRuns(tmp_path_factory)
    for name, (module, fixture) in USERS.items():
        if any(item.path == HERE / module and fixture in item.fixturenames for item in request.session.items):
            try:
                runs.start(name)
            except pytest.skip.Exception:  # no pocketsphinx-testdata: the tests that use it skip saying so
                pass
    yield runs
    for run in runs.runs.values():
        run.stop()
