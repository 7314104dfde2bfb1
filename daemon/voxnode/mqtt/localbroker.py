"""A throwaway Mosquitto on a free loopback port, for `voxnode demo`; `wait_running` also starts the tests' own."""

from __future__ import annotations

import random
import re
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from voxnode.errors import VoxnodeError
from voxnode.lifecycle import STOP_TIMEOUT_S, Component
from voxnode.process_stop import stop_process

# The kernel hands out its ephemeral ports (32768-60999 by default) as the local end of every outgoing
# connection. A server stopped and started again on such a port can find it taken meanwhile: the tests'
# Mosquitto, restarted after a 60 s outage, exited "Address already in use" (CI, stop 48). So the port
# is a free one below that range, where no connection's own end ever lands.
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST_PORT = 10000


def free_port() -> int:
    """A free loopback port below the kernel's ephemeral range (a random one: parallel tests differ)."""
    try:
        below = int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        below = 32768
    lowest = LOWEST_PORT if below > LOWEST_PORT + 1000 else 1024
    for _ in range(200):
        port = random.randrange(lowest, below)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:  # nothing free down there: any port the kernel gives
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout: float = 5.0, host: str = "127.0.0.1") -> bool:
    """Whether something accepts connections on `port` within `timeout` (a server of the daemon's own;
    for a Mosquitto, wait_running: another program's socket answers too)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            socket.create_connection((host, port), 0.2).close()
            return True
        except OSError:
            time.sleep(0.01)
    return False


# How long a Mosquitto has to say it is listening (it said so in 12-13 ms on the shared 2-core machine,
# load 3, nice 19; one that cannot bind a taken port exits in 16-24 ms, and start() says why then).
START_TIMEOUT_S = 5.0
# What Mosquitto (1.x and 2.x) logs once every listener is open.
RUNNING = " running"


class LocalBroker(Component):
    """Anonymous, no persistence, loopback only; logs to a file in its temp folder. Owns the process."""

    def __init__(self) -> None:
        self.port = free_port()
        self.work = Path(tempfile.mkdtemp(prefix="voxnode-broker-"))
        self.proc: subprocess.Popen | None = None

    @property
    def log_path(self) -> Path:
        return self.work / "broker.log"

    def start(self) -> None:
        exe = shutil.which("mosquitto") or ("/usr/sbin/mosquitto" if Path("/usr/sbin/mosquitto").exists() else None)
        if exe is None:
            raise VoxnodeError("mosquitto is not installed (apt-get install mosquitto): the demo cannot show MQTT")
        conf = self.work / "mosquitto.conf"
        # Its log goes to its stderr, and that to broker.log: what it says before it can log (a config
        # error) and after (a port it cannot bind) are in one file, in order.
        conf.write_text(
            f"listener {self.port} 127.0.0.1\nallow_anonymous true\npersistence false\nlog_dest stderr\nuser root\n"
        )
        with open(self.log_path, "wb") as log:  # the child has its own descriptor
            self.proc = subprocess.Popen([exe, "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=log)
        failure = wait_running(self.proc, self.log_path, f"127.0.0.1:{self.port}", conf)
        if failure is not None:
            # A rollback is a stop like any other (lifecycle.start_all's): with a deadline of now, a
            # Mosquitto still starting was killed before it could see its SIGTERM.
            self.stop(time.monotonic() + STOP_TIMEOUT_S)
            raise VoxnodeError(failure)

    def stop(self, deadline: float) -> None:
        """SIGTERM, SIGKILL if it has not left by `deadline`; its folder removed."""
        if self.proc is not None:
            stop_process(self.proc, deadline - time.monotonic())
        shutil.rmtree(self.work, ignore_errors=True)


def wait_running(proc: subprocess.Popen, log_path: Path, where: str, conf: Path, since: int = 0) -> str | None:
    """None once Mosquitto (its stderr, or log, in `log_path` from byte `since`: a restarted one's
    earlier lines do not count) says it is listening; else why not, in one line, as soon as it has
    exited (a port taken, a bad config: a few ms) or after START_TIMEOUT_S. Its own word, not the
    port's answer: a port held by another program answers too."""
    end = time.monotonic() + START_TIMEOUT_S
    while True:
        said = _said(log_path, since)
        if any(line.endswith(RUNNING) for line in said) and proc.poll() is None:
            return None
        if proc.poll() is not None:
            said = _said(log_path, since)  # all it wrote before it left
            status = proc.returncode
            return f"mosquitto exited (status {status}) without listening on {where} (config {conf}): {_cause(said)}"
        if time.monotonic() > end:
            return f"mosquitto did not start on {where} in {START_TIMEOUT_S:g} s (config {conf}): {_cause(said)}"
        time.sleep(0.01)


def _said(log_path: Path, since: int) -> list[str]:
    """Mosquitto's log lines from byte `since`, without their timestamps."""
    try:
        with open(log_path, "rb") as f:
            f.seek(since)
            text = f.read().decode("utf-8", errors="replace")
    except OSError:
        return []
    return [re.sub(r"^\d+: ", "", line).strip() for line in text.splitlines() if line.strip()]


def _cause(said: list[str]) -> str:
    """Its error lines ("Error: Address already in use"; a config error and where: two), else its last."""
    errors = [line for line in said if line.startswith("Error")]
    return "; ".join(errors) if errors else said[-1] if said else "it wrote nothing"
