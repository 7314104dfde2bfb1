"""A throwaway Mosquitto on a free loopback port, for `voxnode demo` (and a model for the tests' fixture)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from voxnode.errors import VoxnodeError
from voxnode.lifecycle import STOP_TIMEOUT_S, Component
from voxnode.process_stop import stop_process


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout: float = 5.0, host: str = "127.0.0.1") -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            socket.create_connection((host, port), 0.2).close()
            return True
        except OSError:
            time.sleep(0.01)
    return False


class LocalBroker(Component):
    """Anonymous, no persistence, loopback only; logs to a file in its temp folder. Owns the process."""

    def __init__(self) -> None:
        self.port = free_port()
        self.work = Path(tempfile.mkdtemp(prefix="voxnode-broker-"))
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        exe = shutil.which("mosquitto") or ("/usr/sbin/mosquitto" if Path("/usr/sbin/mosquitto").exists() else None)
        if exe is None:
            raise VoxnodeError("mosquitto is not installed (apt-get install mosquitto): the demo cannot show MQTT")
        conf = self.work / "mosquitto.conf"
        conf.write_text(
            f"listener {self.port} 127.0.0.1\nallow_anonymous true\npersistence false\n"
            f"log_dest file {self.work / 'broker.log'}\nuser root\n"
        )
        self.proc = subprocess.Popen([exe, "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not wait_port(self.port):
            # A rollback is a stop like any other (lifecycle.start_all's): with a deadline of now, a
            # Mosquitto still starting was killed before it could see its SIGTERM.
            self.stop(time.monotonic() + STOP_TIMEOUT_S)
            raise VoxnodeError(f"mosquitto did not start on 127.0.0.1:{self.port}; see {self.work / 'broker.log'}")

    def stop(self, deadline: float) -> None:
        """SIGTERM, SIGKILL if it has not left by `deadline`; its folder removed."""
        if self.proc is not None:
            stop_process(self.proc, deadline - time.monotonic())
        shutil.rmtree(self.work, ignore_errors=True)
