"""A stand-in journald for tests (no journald runs on the test machine): run inside a private mount
namespace where a tmpfs hides the host's /run/systemd, bind the journal's native socket, run the
commands, and write every entry received as JSON.

    unshare -m --propagation private sh -c 'mount -t tmpfs tmpfs /run/systemd && \\
        exec python -m tests.systemd.fake_journald OUT.json SECONDS [--until TEXT] -- CMD ... [--- CMD ...]'

Each command runs until it exits, at most SECONDS, then gets SIGTERM. With --until, a command also
gets SIGTERM as soon as an entry whose MESSAGE contains TEXT has arrived since it started: the run
lasts as long as the machine needs to get there, not a fixed time that a loaded machine overruns.
One still running STOP_S after its SIGTERM is killed (its exit code -9 in OUT) and reaped.
Entries follow journald's native protocol: "KEY=VALUE\\n", or for values with newlines "KEY\\n" +
64-bit LE length + data + "\\n". Once the commands have exited, whatever they sent is in the socket's
queue (a datagram send returns once queued at the receiver): it is all read before OUT is written.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time

from voxnode.process_stop import stop_process

SOCKET = "/run/systemd/journal/socket"
STOP_S = 10.0  # after SIGTERM, a command gets this long to exit before SIGKILL


def parse(data: bytes) -> dict[str, str]:
    fields, i = {}, 0
    while i < len(data):
        nl = data.index(b"\n", i)
        line = data[i:nl]
        if b"=" in line:
            key, value = line.split(b"=", 1)
            i = nl + 1
        else:
            key = line
            (size,) = struct.unpack("<Q", data[nl + 1 : nl + 9])
            value = data[nl + 9 : nl + 9 + size]
            i = nl + 9 + size + 1
        fields[key.decode()] = value.decode("utf-8", "replace")
    return fields


def run(cmd: list[str], seconds: float, until: str | None, entries: list[dict]) -> int:
    """Run `cmd` until it exits, `until` shows up in a new entry's MESSAGE, or `seconds` pass."""
    seen = len(entries)
    end = time.monotonic() + seconds
    p = subprocess.Popen(cmd)
    while p.poll() is None and time.monotonic() < end:
        if until is not None and any(until in e.get("MESSAGE", "") for e in entries[seen:]):
            break
        time.sleep(0.05)
    return stop_process(p, STOP_S)  # its exit code; -SIGKILL if it ignored SIGTERM for STOP_S


def main(argv: list[str]) -> int:
    out, seconds = argv[0], float(argv[1])
    until = None
    if argv[2] == "--until":
        until, argv = argv[3], argv[:2] + argv[4:]
    rest = argv[3:]  # after "--"
    commands, cur = [], []
    for a in rest:
        if a == "---":
            commands.append(cur)
            cur = []
        else:
            cur.append(a)
    commands.append(cur)
    os.makedirs(os.path.dirname(SOCKET), exist_ok=True)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(SOCKET)
    sock.settimeout(0.2)
    entries: list[dict] = []
    done = threading.Event()

    def receive() -> None:
        while not done.is_set():
            try:
                entries.append(parse(sock.recv(1 << 20)))
            except TimeoutError:
                continue

    t = threading.Thread(target=receive, daemon=True)
    t.start()
    codes = [run(cmd, seconds, until, entries) for cmd in commands]
    done.set()
    t.join()
    sock.setblocking(False)
    while True:  # what the receiver had not read yet when the last command exited
        try:
            entries.append(parse(sock.recv(1 << 20)))
        except BlockingIOError:
            break
    with open(out, "w") as f:
        json.dump({"entries": entries, "exit_codes": codes}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
