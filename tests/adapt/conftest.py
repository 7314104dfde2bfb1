"""tests/adapt's three TensorFlow runs in the build-time venv (a tiny `voxnode adapt`, lora_probe.py and
regularise_probe.py) start two at a time when the first of them is needed, each only if a collected
test uses it; each test module's fixture then waits for its own run and asserts on it as before.

One after the other they were the suite's three slowest set-ups (2-vCPU EPYC, stop 44: 50.7 + 36.3 +
22.3 s wall for 48.4 + 34.9 + 22.1 CPU s: TensorFlow's batch-1 graphs keep about one core busy). Three
at once: 76.3 s; two at a time: 59.2 s (tests/adapt 139 -> 68 s with scripts/adapt/choices.py, load
0.3-1.4). Nothing in them is timed; each has its own folder, process and 600 s, as before.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
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
# Two at a time: each holds up to ~3 GB (TensorFlow, tiny.en's weights and their gradients): three at once
# peaked at 8.9 GB RSS together (stop 44), two at 6.6. The adapt run and the LoRA probe start first; the
# regularisation probe when one of them ends.
AT_ONCE = 2
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
        self.cmd, self.folder = cmd, folder  # the deadline counts from the start, as subprocess.run's timeout
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
    """The runs, started AT_ONCE at a time in the order asked (a thread starts the next as one ends);
    one a test needs now starts at once."""

    def __init__(self, tmp_path_factory: pytest.TempPathFactory):
        self._tmp = tmp_path_factory
        self.runs: dict[str, Run] = {}
        self._queued: dict[str, tuple[list[str], dict[str, str], Path]] = {}
        self._lock = threading.Lock()

    def _prepare(self, name: str) -> tuple[list[str], dict[str, str], Path]:
        folder = self._tmp.mktemp(name)
        if name == "adapt":
            return (*_adapt_command(folder), folder)
        return (*_probe_command(f"tests.adapt.{name}_probe"), folder)

    def queue(self, names: list[str]) -> None:
        for name in names:
            try:
                self._queued[name] = self._prepare(name)
            except pytest.skip.Exception:  # no pocketsphinx-testdata: the tests that use it skip saying so
                pass
        self._fill()
        threading.Thread(target=self._feed, daemon=True).start()

    def _fill(self) -> None:
        with self._lock:
            while self._queued and sum(r.proc.poll() is None for r in self.runs.values()) < AT_ONCE:
                name = next(iter(self._queued))
                self.runs[name] = Run(*self._queued.pop(name))

    def _feed(self) -> None:
        while self._queued:
            time.sleep(0.2)
            self._fill()

    def start(self, name: str) -> Run:
        with self._lock:
            if name not in self.runs:
                self.runs[name] = Run(*(self._queued.pop(name, None) or self._prepare(name)))
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

    def stop(self) -> None:
        with self._lock:
            self._queued.clear()
            for run in self.runs.values():
                run.stop()


@pytest.fixture(scope="session")
def adapt_runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    runs = AdaptRuns(tmp_path_factory)
    items = request.session.items
    runs.queue([n for n, (m, f) in USERS.items() if any(i.path == HERE / m and f in i.fixturenames for i in items)])
    yield runs
    runs.stop()
