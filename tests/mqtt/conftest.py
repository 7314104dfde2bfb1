"""Fixtures for the MQTT tests: real Mosquitto brokers, a recording monitor, the feeder daemon."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import jsonschema
import pytest

from tests.mqtt.broker import Broker, Monitor, make_ca
from voxnode.process_stop import stop_process

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "docs" / "schemas"


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return json.dumps(str(v))


def write_config(
    path: Path, broker: Broker | None, *, stream: str = "mic", stream_area: str = "", health: dict | None = None, **mqtt
) -> Path:
    settings = {
        "enabled": True,
        "host": broker.host if broker else "127.0.0.1",
        "port": broker.port if broker else 1,
        "node_id": "testnode",
        "reconnect_min_s": 0.5,
        "reconnect_max_s": 2.0,
        "keepalive": 5,
        "spool_path": str(path.parent / "spool.sqlite"),
    }
    settings.update(mqtt)
    h = {"interval_s": 1.0, "malloc_trim_interval_s": 0.0}
    h.update(health or {})
    text = '[log]\nlevel = "info"\n\n[audio]\n\n[mqtt]\n' + "".join(
        f"{k} = {toml_value(v)}\n" for k, v in settings.items()
    )
    text += "\n[health]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in h.items())
    if stream != "mic":
        text += f'\n[[streams]]\nname = "{stream}"\ndevice = "null"\n'
        if stream_area:
            text += f"area = {toml_value(stream_area)}\n"
    path.write_text(text)
    return path


class Feeder:
    """`python -m tests.mqtt.feeder`: the real daemon in a subprocess, emitting synthetic finals."""

    def __init__(
        self,
        config: Path,
        *,
        count: int,
        interval: float,
        tag: str,
        linger: float = 600.0,
        partials: bool = False,
        stdout: bool = False,
        python: list[str] | None = None,
        env: dict | None = None,
    ):
        """`stdout`: the daemon also prints every event as a JSON line (collected in `events`);
        `python`: the interpreter command (e.g. run as another user), `env`: extra environment."""
        self.accepted: list[str] = []
        self.events: list[dict] = []
        self.stderr_path = config.parent / f"feeder-{tag}.log"
        args = [
            *(python or [sys.executable]),
            "-m",
            "tests.mqtt.feeder",
            "--config",
            str(config),
            "--count",
            str(count),
            "--interval",
            str(interval),
            "--tag",
            tag,
            "--linger",
            str(linger),
        ]
        if partials:
            args.append("--partials")
        if stdout:
            args.append("--stdout")
        env = {**os.environ, "PYTHONMALLOC": "malloc", **(env or {})}
        self._err = open(self.stderr_path, "wb")  # noqa: SIM115 (the child writes to it until stop() closes it)
        self.proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=self._err, env=env, text=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            if line.startswith("accepted "):
                assert "{" not in line, f"two lines written into one: {line!r}"  # the feeder's say() prevents it
                self.accepted.append(line.split()[2])
            elif line.startswith("{"):
                self.events.append(json.loads(line))

    def finals(self) -> list[dict]:
        """The finals the daemon printed on stdout (with --stdout)."""
        return [e for e in list(self.events) if e.get("type") == "final"]

    def wait_accepted(self, n: int, timeout: float = 30.0) -> None:
        end = time.monotonic() + timeout
        while len(self.accepted) < n and time.monotonic() < end:
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        assert len(self.accepted) >= n, f"feeder accepted {len(self.accepted)}/{n}; log:\n{self.log()}"

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15.0) -> int:
        rc = stop_process(self.proc, timeout, sig)
        self._reader.join(2)
        self._err.close()
        return rc

    def log(self) -> str:
        try:
            return self.stderr_path.read_text()
        except OSError:
            return ""


@pytest.fixture
def feeders():
    started: list[Feeder] = []

    def start(*args, **kwargs) -> Feeder:
        f = Feeder(*args, **kwargs)
        started.append(f)
        return f

    yield start
    for f in started:
        if f.proc.poll() is None:
            f.stop(signal.SIGKILL)


@pytest.fixture
def broker(tmp_path):
    b = Broker(tmp_path / "broker").start()
    yield b
    b.stop()


@pytest.fixture
def monitor_for():
    made: list[Monitor] = []

    def make(broker: Broker, **kw) -> Monitor:
        m = Monitor(broker, **kw)
        made.append(m)
        return m

    yield make
    for m in made:
        m.close()


@pytest.fixture(scope="session")
def test_ca(tmp_path_factory):
    return make_ca(tmp_path_factory.mktemp("ca"))


def _schema(name: str) -> dict:
    return json.loads((SCHEMAS / f"{name}.json").read_text())


@pytest.fixture(scope="session")
def validate():
    cache: dict[str, jsonschema.protocols.Validator] = {}

    def check(name: str, payload: bytes | dict | str):
        if name not in cache:
            schema = _schema(name)
            cls = jsonschema.validators.validator_for(schema)
            cls.check_schema(schema)
            cache[name] = cls(schema, format_checker=cls.FORMAT_CHECKER)
        if isinstance(payload, bytes):
            payload = json.loads(payload)
        cache[name].validate(payload)
        return payload

    return check


def state_of(payload: bytes | None) -> str | None:
    """The `state` of a status message (JSON: docs/schemas/status.json)."""
    return None if payload is None else json.loads(payload)["state"]


def states(payloads: list[bytes]) -> list[str]:
    return [json.loads(p)["state"] for p in payloads]


def assert_all_finals_arrived(monitor: Monitor, expected_ids: list[str], topic: str) -> dict:
    """Every accepted final arrived, first arrivals in order with increasing seq, duplicates only of the same id."""
    got = [json.loads(p) for p in monitor.on(topic)]
    first: dict[int, dict] = {}
    order: list[dict] = []
    dups = 0
    for m in got:
        prev = first.get(m["seq"])
        if prev is None:
            first[m["seq"]] = m
            order.append(m)
        else:
            dups += 1
            assert prev["id"] == m["id"], f"seq {m['seq']} delivered with two ids: {prev['id']} and {m['id']}"
    ids = [m["id"] for m in order]
    missing = [i for i in expected_ids if i not in set(ids)]
    assert not missing, f"{len(missing)} of {len(expected_ids)} finals lost: {missing[:10]}"
    assert ids == expected_ids, "finals arrived out of order (first deliveries)"
    seqs = [m["seq"] for m in order]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), f"gap in seq: {seqs}"
    return {"received": len(got), "unique": len(order), "duplicates": dups}
