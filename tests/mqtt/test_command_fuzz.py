"""Command fuzz (issue 27, item 5): malformed commands over a real Mosquitto to the real daemon (feeder
subprocess). Each gets one `error` reply that matches its schema, nothing changes, no traceback is
logged, and the daemon still answers afterwards.

Before: a 5,000-digit integer made json.loads raise ValueError (Python's 4,300-digit limit for int()
of a string), logged as a traceback with no reply; a lone surrogate ("\\ud800") in `cmd` or `id`
made the reply itself fail to encode (another traceback)."""

from __future__ import annotations

import json
import random

from tests.mqtt.conftest import write_config
from voxnode.mqtt.commands import CommandError, parse_command, parse_mute_set

BASE = "voxnode/testnode"
CMD = f"{BASE}/cmd"
MUTE_SET = f"{BASE}/mic/mute/set"
VALID = [b'{"cmd": "health"}', b'{"cmd": "mute", "stream": "mic", "id": "a1"}', b'{"cmd": "memory", "id": "m"}']
# Above the default 4096: a 4,301-digit integer does not fit in 4096 bytes (the probe raised the limit).
MAX_BYTES = 16384

HANDPICKED: list[bytes] = [
    b"9" * 5000,
    b'{"cmd": "health", "id": ' + b"1" * 5000 + b"}",
    b'{"cmd": ' + b"7" * 4301 + b"}",
    b'{"cmd": "mute", "stream": -' + b"3" * 4500 + b"}",
    b"[" + b"5" * 4400 + b"]",
    b'{"cmd": "\\ud800"}',
    b'{"cmd": "health", "id": "\\udfff"}',
    b'{"cmd": "memory", "id": "\\ud83d"}',
    b'{"cmd": "mute", "stream": "\\ud800"}',
    b'{"cmd": "nope", "id": "ok", "\\udc00": 1}',
    b'{"cmd": "health", "id": NaN}',
    b'{"cmd": Infinity}',
    b'{"cmd": "health", "x": 1e99999}',
    b'{"cmd": "health", "cmd": 5}',
    b'\xef\xbb\xbf{"cmd": "health"}',
    b'{"cmd": "health"}\x00',
    b'{"cmd": "health"} {"cmd": "health"}',
    b" ",
    b"null",
    b"true",
    b'"health"',
    b"{}",
    b'{"cmd": null}',
    b'{"cmd": ["health"]}',
    b'{"cmd": {"cmd": "health"}}',
    b'{"cmd": "health", "id": ["a"]}',
    b'{"cmd": "mute", "stream": ["mic"]}',
    b'{"cmd": "mute", "stream": "mic\\u0000"}',
    b'{"cmd": "MUTE", "stream": "mic"}',
    b'{"cmd": "reload", "stream": "mic"}',
    b'{"cmd": "health"',
    b"{" * 8 + b"}" * 8,
    b'{"a":' * 9 + b"1" + b"}" * 9,
    b'{"cmd": "health", "id": "' + "é".encode() * 1500 + b'"}',
    b"\xc3",
    b"\xed\xa0\x80",  # a UTF-8-encoded surrogate: not UTF-8
    b"\xf4\x90\x80\x80",
]


def fuzz_cmd_payloads(seed: int = 27, n: int = 260) -> list[bytes]:
    rng = random.Random(seed)
    out = list(HANDPICKED)
    for _ in range(n):
        base = rng.choice(VALID)
        how = rng.randrange(5)
        if how == 0:  # truncated
            out.append(base[: rng.randrange(len(base))])
        elif how == 1:  # bytes flipped
            b = bytearray(base)
            for _ in range(rng.randint(1, 4)):
                b[rng.randrange(len(b))] = rng.randrange(256)
            out.append(bytes(b))
        elif how == 2:  # random bytes
            out.append(bytes(rng.randrange(256) for _ in range(rng.randint(1, 200))))
        elif how == 3:  # a weird value in a known key
            key = rng.choice(["cmd", "stream", "id"])
            value = rng.choice(
                [
                    "9" * rng.randint(4301, 9000),
                    "-" + "8" * 4400,
                    "1e" + "9" * rng.randint(3, 400),
                    f'"\\ud8{rng.randrange(256):02x}"',
                    f'"\\u{rng.randrange(0x10000):04x}"',
                    "[" * 8 + "]" * 8,
                    "-0",
                    "1.5e-999",
                    '"' + "x" * 3000 + '"',
                ]
            )
            body = {"cmd": "mute", "stream": "mic"}
            parts = [f'"{k}": {json.dumps(v)}' for k, v in body.items() if k != key]
            out.append(("{" + ", ".join([*parts, f'"{key}": {value}']) + "}").encode())
        else:  # spliced
            a, b = rng.sample(VALID, 2)
            out.append(a[: rng.randrange(len(a))] + b[rng.randrange(len(b)) :])
    # Only refusals: a valid command (a mute, a reload) would change what the test reads afterwards.
    # An empty payload is how a retained message is cleared, not a command: no reply (test_retained_commands).
    refused = []
    for p in out:
        try:
            parse_command(p, max_bytes=MAX_BYTES, streams=["mic"])
        except Exception:  # noqa: BLE001 - CommandError, or what the daemon must now refuse cleanly
            if p:
                refused.append(p)
    return refused


def fuzz_mute_set_payloads(seed: int = 28, n: int = 40) -> list[bytes]:
    rng = random.Random(seed)
    out = [b"on\x00", b"ONN", b"\xff", "ÖN".encode(), b"O" * 17, b"1", b"true", b"ON" * 9, b"\xed\xa0\x80"]
    out += [bytes(rng.randrange(256) for _ in range(rng.randint(1, 20))) for _ in range(n)]
    refused = []
    for p in out:
        try:
            parse_mute_set(MUTE_SET, "mic", p, streams=["mic"])
        except CommandError:
            refused.append(p)
    return refused


def test_command_fuzz_gets_replies_and_no_traceback(tmp_path, broker, monitor_for, feeders, validate):
    cmd_payloads = fuzz_cmd_payloads()
    mute_payloads = fuzz_mute_set_payloads()
    assert len(cmd_payloads) > 250 and len(mute_payloads) > 40
    mon = monitor_for(broker)
    cfg = write_config(tmp_path / "c.toml", broker, health={"interval_s": 3600.0}, max_command_bytes=MAX_BYTES)
    f = feeders(cfg, count=1, interval=0.1, tag="fuzz")
    assert mon.wait_for(lambda: mon.on(f"{BASE}/mic/mute/state")[-1:] == [b"OFF"], 30), f.log()
    # In batches the command queue (32) holds: each payload then gets its own reply, not `busy`.
    sent = 0
    batch = [(CMD, p) for p in cmd_payloads] + [(MUTE_SET, p) for p in mute_payloads]
    for i in range(0, len(batch), 16):
        for topic, payload in batch[i : i + 16]:
            mon.client.publish(topic, payload, qos=1)
            sent += 1
        assert mon.wait_for(lambda n=sent: len(mon.on(f"{BASE}/error")) >= n, 30), (sent, f.log()[-3000:])
    errors = [validate("error", p) for p in mon.on(f"{BASE}/error")]
    assert len(errors) == sent
    assert "busy" not in {e["error"] for e in errors}
    digits = next(e for e in errors if e["received"] == "9" * 200)
    assert digits["error"] == "malformed" and "4300 digits" in digits["message"], digits
    n = len(mon.on(f"{BASE}/health"))
    mon.client.publish(CMD, b'{"cmd": "health"}', qos=1)
    assert mon.wait_for(lambda: len(mon.on(f"{BASE}/health")) > n, 30), "the daemon stopped answering"
    assert json.loads(mon.on(f"{BASE}/health")[-1])["streams"]["mic"]["muted"] is False
    assert mon.on(f"{BASE}/mic/mute/state")[-1:] == [b"OFF"]
    assert f.stop() == 0
    log = f.log()
    assert "Traceback" not in log, log[log.find("Traceback") - 500 :][:4000]
