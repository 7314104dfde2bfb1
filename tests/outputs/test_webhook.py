"""The webhook output against a real HTTP server on loopback (http.server in a thread) that times out
and fails before it recovers: every final arrives, in seq order, and is accepted once per seq; what
the endpoint had not accepted when the daemon stopped arrives after the next start.

The daemon is the real one in a subprocess (tests/mqtt/feeder.py) fed synthetic finals, so the
decoder's timing plays no part in what is checked here."""

from __future__ import annotations

import json
import signal
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.mqtt.conftest import Feeder
from voxnode.config import parse_config
from voxnode.errors import ConfigError


class Endpoint:
    """Answers the first `slow` POSTs after `slow_s` (past the client's timeout), the next `fail` with
    503, then 200; records the body and headers of each POST it answered 200."""

    def __init__(self, *, slow: int = 0, slow_s: float = 0.0, fail: int = 0):
        self.slow, self.slow_s, self.fail = slow, slow_s, fail
        self.posts = 0
        self.accepted: list[tuple[dict, dict]] = []
        self.lock = threading.Lock()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with endpoint.lock:
                    endpoint.posts += 1
                    n = endpoint.posts
                if n <= endpoint.slow:
                    time.sleep(endpoint.slow_s)
                    status = 200  # too late: the client gave up, so it must send it again
                elif n <= endpoint.slow + endpoint.fail:
                    status = 503
                else:
                    status = 200
                    with endpoint.lock:
                        endpoint.accepted.append((json.loads(body), dict(self.headers)))
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook?node=test"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def finals(self) -> list[dict]:
        with self.lock:
            return [body for body, _ in self.accepted]

    def wait_for(self, n: int, timeout: float = 60.0) -> list[dict]:
        end = time.monotonic() + timeout
        while len(self.finals()) < n and time.monotonic() < end:
            time.sleep(0.05)
        return self.finals()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def webhook_config(folder: Path, url: str, **extra: str) -> Path:
    path = folder / "webhook.toml"
    lines = [f'url = "{url}"', "timeout_s = 0.5", "retry_min_s = 0.2", "retry_max_s = 1.0"]
    lines += [f"{k} = {v}" for k, v in extra.items()]
    path.write_text(
        f'[log]\nlevel = "info"\n\n[delivery]\nspool_path = "{folder / "spool.sqlite"}"\n\n'
        "[webhook]\n" + "\n".join(lines) + "\n"
    )
    return path


@pytest.fixture
def endpoints():
    made: list[Endpoint] = []

    def make(**kw) -> Endpoint:
        e = Endpoint(**kw)
        made.append(e)
        return e

    yield make
    for e in made:
        e.close()


def test_every_final_arrives_once_per_seq_through_timeouts_and_failures(tmp_path, endpoints):
    hook = endpoints(slow=1, slow_s=1.5, fail=4)
    config = webhook_config(tmp_path, hook.url, headers='["Authorization: Bearer t0k"]')
    f = Feeder(config, count=20, interval=0.02, tag="wh", linger=60.0)
    try:
        got = hook.wait_for(20)
    finally:
        assert f.stop() == 0, f.log()
    assert [(e["seq"], e["id"]) for e in got] == [(i, f"wh-{i:04d}") for i in range(1, 21)], f.log()
    assert hook.posts >= 25  # 1 timed out + 4 refused, each retried
    body, headers = hook.accepted[0]
    assert headers["Authorization"] == "Bearer t0k" and headers["Content-Type"] == "application/json"
    assert all(h["X-Voxnode-Seq"] == str(b["seq"]) for b, h in hook.accepted)
    assert body["type"] == "final" and body["stream"] == "mic" and "model" in body  # the MQTT payload
    log = f.log()
    assert "timed out" in log and "answered 503" in log  # each cause once, in one line
    assert "accepted final seq 1 after 5 failure(s)" in log


def test_health_reports_the_webhook_by_the_schema(tmp_path, endpoints):
    """The daemon's health report (in process here: the report MQTT would publish) has the webhook's
    section and the spool's, as docs/schemas/health.json describes them."""
    import jsonschema

    from voxnode.config import load_config
    from voxnode.daemon import Daemon
    from voxnode.outputs.table import add_outputs

    hook = endpoints()
    daemon = Daemon(load_config(webhook_config(tmp_path, hook.url)), [])
    add_outputs(daemon)
    daemon._wire_delivery()  # what run() does before anything starts
    report = daemon.reporter.report(time.monotonic())
    schema = json.loads((Path(__file__).parents[2] / "docs" / "schemas" / "health.json").read_text())
    schema = {**schema, "required": [k for k in schema["required"] if k != "mqtt"]}  # MQTT is off here
    jsonschema.validate(report, schema)
    assert report["webhook"]["url"] == hook.url.split("?")[0] and report["webhook"]["backlog"] == 0
    assert report["delivery"]["pending"] == {"webhook": 0}
    daemon.delivery.stop(time.monotonic())


def test_finals_the_endpoint_missed_arrive_after_a_restart(tmp_path, endpoints):
    down = endpoints(fail=10**6)  # refuses everything: the finals wait in the spool
    config = webhook_config(tmp_path, down.url)
    f = Feeder(config, count=8, interval=0.02, tag="down", linger=60.0)
    f.wait_accepted(8)
    end = time.monotonic() + 10
    while down.posts < 2 and time.monotonic() < end:
        time.sleep(0.05)
    assert f.stop(signal.SIGTERM) == 0, f.log()
    assert "8 final(s) not yet acknowledged stay in" in f.log()
    up = endpoints()
    config = webhook_config(tmp_path, up.url)
    g = Feeder(config, count=1, interval=0.02, tag="up", linger=60.0)
    try:
        got = up.wait_for(9)
    finally:
        assert g.stop() == 0, g.log()
    assert [e["id"] for e in got] == [f"down-{i:04d}" for i in range(1, 9)] + ["up-0001"]
    assert [e["seq"] for e in got] == list(range(1, 10))


@pytest.mark.parametrize(
    ("toml", "error"),
    [
        ('url = "ftp://x/y"', 'webhook.url = "ftp://x/y": must be an http:// or https:// URL with a host'),
        (
            'url = "http://h/"\nheaders = ["Accept: x", "NoColon"]',
            'webhook.headers[1]: must be "Name: value" on one line; "NoColon" is not',
        ),
        ('url = "http://h/"\nretry_min_s = 5.0\nretry_max_s = 2.0', "must not be smaller than retry_min_s (5.0)"),
        # Before: check-config passed them and `run` stopped on a ValueError's traceback (the third one
        # also check-config); port 0 was POSTed to and retried for ever.
        ('url = "http://h:99999/x"', 'webhook.url = "http://h:99999/x": is not a valid URL (Port out of range'),
        ('url = "http://h:abc/x"', 'webhook.url = "http://h:abc/x": is not a valid URL (Port could not be cast'),
        ('url = "http://[::1/x"', 'webhook.url = "http://[::1/x": is not a valid URL (Invalid IPv6 URL)'),
        ('url = "http://h:0/x"', 'webhook.url = "http://h:0/x": port 0 is no port'),
    ],
)
def test_bad_settings_are_one_line_naming_the_key(toml, error):
    with pytest.raises(ConfigError) as e:
        parse_config(f"[webhook]\n{toml}\n", "c.toml")
    assert error in str(e.value) and "\n" not in str(e.value)
