"""A stand-in journald for tests (no journald runs on the test machine): run inside a private mount
namespace where a tmpfs hides the host's /run/systemd, bind the journal's native socket, run the
commands, and write every entry received as JSON.

    unshare -m --propagation private sh -c 'mount -t tmpfs tmpfs /run/systemd && \\
        exec python -m tests.systemd.fake_journald OUT.json SECONDS -- CMD ... [--- CMD ...]'

Each command runs for at most SECONDS, then gets SIGTERM. Entries follow journald's native
protocol: "KEY=VALUE\\n", or for values with newlines "KEY\\n" + 64-bit LE length + data + "\\n".
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading

SOCKET = "/run/systemd/journal/socket"


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


def main(argv: list[str]) -> int:
    out, seconds, rest = argv[0], float(argv[1]), argv[3:]
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
    codes = []
    for cmd in commands:
        p = subprocess.Popen(cmd)
        try:
            codes.append(p.wait(seconds))
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGTERM)
            codes.append(p.wait(10))
    done.set()
    t.join(1)
    with open(out, "w") as f:
        json.dump({"entries": entries, "exit_codes": codes}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
