"""Test aids for the service tests: a real NOTIFY_SOCKET listener and a pausable paced microphone."""

from __future__ import annotations

import os
import queue
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from tests.alsa_env import ROOT


@dataclass
class Message:
    t: float  # monotonic arrival time
    pid: int | None  # sender, from SCM_CREDENTIALS, as systemd learns it
    fields: dict[str, str]
    raw: str


class NotifySocket:
    """An AF_UNIX datagram socket like systemd's notify socket, with SO_PASSCRED to learn the sender pid."""

    def __init__(self, folder: Path):
        self.path = str(folder / "notify.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.sock.settimeout(0.2)
        self.messages: list[Message] = []
        self._new: queue.Queue[Message] = queue.Queue()
        self._closed = False
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._closed:
            try:
                data, anc, _, _ = self.sock.recvmsg(4096, socket.CMSG_SPACE(12))
            except TimeoutError:
                continue
            except OSError:
                return
            pid = None
            for level, kind, payload in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                    pid = struct.unpack("3i", payload[:12])[0]
            raw = data.decode()
            fields = dict(line.split("=", 1) for line in raw.splitlines() if "=" in line)
            msg = Message(time.monotonic(), pid, fields, raw)
            self.messages.append(msg)
            self._new.put(msg)

    def wait_for(self, pred, timeout: float = 10.0) -> Message:
        """The next message (arriving from now on, or already queued and unread) matching `pred`."""
        end = time.monotonic() + timeout
        while True:
            remaining = end - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"no matching notify message within {timeout} s; got {self.kinds()}")
            try:
                msg = self._new.get(timeout=remaining)
            except queue.Empty:
                continue
            if pred(msg):
                return msg

    def kinds(self, since: float = 0.0) -> list[str]:
        """Message kinds in order: READY, STATUS, WATCHDOG, RELOADING, STOPPING (first key of each)."""
        out = []
        for m in self.messages:
            if m.t >= since:
                out.append("+".join(k.split("=")[0] for k in m.raw.splitlines() if not k.startswith("MONOTONIC")))
        return out

    def close(self) -> None:
        self._closed = True
        self._thread.join(1)
        self.sock.close()


def has(key: str, value: str | None = None):
    return lambda m: key in m.fields and (value is None or value in m.fields[key])


class PacedMic:
    """Writes 20 ms periods of faint noise into the ALSA FIFO in real time while `feeding`.

    The FIFO is opened read-write so that opening never blocks: the daemon's ALSA open of a FIFO
    without a writer would block inside snd_pcm_open, which pyalsaaudio calls holding the GIL,
    freezing the whole process (a test artefact; a real device opens at once). Holding the FIFO
    open while paused makes the capture's read block, exactly like a hung device.
    """

    def __init__(self, fifo: Path, feeding: bool = True):
        self.fd = os.open(fifo, os.O_RDWR)
        self.feeding = threading.Event()
        if feeding:
            self.feeding.set()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        period = b"\x10\x00\xf0\xff" * 160  # 640 bytes: one 20 ms period
        next_t = time.monotonic()
        while not self._closed.is_set():
            if self.feeding.is_set():
                os.write(self.fd, period)
            next_t += 0.02
            time.sleep(max(0.0, next_t - time.monotonic()))

    def pause(self) -> None:
        self.feeding.clear()

    def resume(self) -> None:
        self.feeding.set()

    def close(self) -> None:
        self._closed.set()
        self._thread.join(2)
        os.close(self.fd)


def start_daemon(
    args: list[str],
    notify: NotifySocket | None,
    tmp: Path,
    watchdog_s: float | None = None,
    extra_env: dict | None = None,
) -> subprocess.Popen:
    env = {**os.environ, "PYTHONMALLOC": "malloc", "PYTHONPATH": str(ROOT / "daemon")}
    for k in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "JOURNAL_STREAM", "INVOCATION_ID"):
        env.pop(k, None)
    if notify is not None:
        env["NOTIFY_SOCKET"] = notify.path
    if watchdog_s is not None:
        env["WATCHDOG_USEC"] = str(int(watchdog_s * 1e6))
    env.update(extra_env or {})
    # The child writes to its own copy of the descriptor; this process's is closed once it is started.
    with open(tmp / "stderr.log", "wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "voxnode", "run", *args],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log,
            cwd=tmp,
        )


def stop(p: subprocess.Popen, timeout: float = 10.0) -> int:
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
    try:
        return p.wait(timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        raise
