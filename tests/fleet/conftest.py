"""Fleet-monitoring fixtures: a real daemon serving Prometheus metrics (with MQTT to a real Mosquitto),
and a real Prometheus server (Debian's `prometheus` package, installed by `make deps-test`) scraping it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
import wave
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from tests.alsa_env import ROOT
from tests.mqtt.broker import Broker
from tests.outputs.test_webhook import Endpoint
from voxnode.mqtt.localbroker import free_port, wait_port
from voxnode.process_stop import stop_process

PROMTOOL = shutil.which("promtool")
PROMETHEUS = shutil.which("prometheus")
needs_prometheus = pytest.mark.skipif(
    PROMTOOL is None or PROMETHEUS is None, reason="needs promtool and prometheus (Debian's prometheus; make deps-test)"
)
MONITORING = ROOT / "monitoring"
NODE = "fleettest"


def get(url: str, timeout: float = 5.0) -> str:
    return urllib.request.urlopen(url, timeout=timeout).read().decode()


def speech_wav(path: Path, repeats: int) -> Path:
    """The bundled clip `repeats` times with 2 s of silence after each: one final every ~7 s."""
    from voxnode.audio.wavfile import float_to_s16, read_audio
    from voxnode.demo import bundled_clip

    clip = float_to_s16(read_audio(bundled_clip()))
    gap = np.zeros(32000, dtype=np.int16)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(np.concatenate([clip, gap] * repeats).tobytes())
    return path


@dataclass
class ScrapedDaemon:
    """`voxnode run --file ... --stdout` with Prometheus on, MQTT to a real broker and a webhook to a
    real HTTP server (its first POST answered 503): three durable outputs on one spool."""

    proc: subprocess.Popen
    port: int
    work: Path
    endpoint: Endpoint
    finals: list[dict] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/metrics"

    def read_events(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("type") == "final":
                self.finals.append(event)

    def log(self) -> str:
        return (self.work / "daemon.log").read_text(errors="replace")


@pytest.fixture(scope="module")
def scraped_daemon(tmp_path_factory):
    work = tmp_path_factory.mktemp("scraped")
    broker = Broker(work / "broker").start()
    endpoint = Endpoint(fail=1)
    port = free_port()
    cfg = work / "c.toml"
    cfg.write_text(
        f'[mqtt]\nenabled = true\nhost = "127.0.0.1"\nport = {broker.port}\nnode_id = "{NODE}"\n'
        f'spool_path = "{work / "spool.sqlite"}"\n\n'
        f'[webhook]\nurl = "{endpoint.url}"\nretry_min_s = 0.2\n\n'
        f"[health]\ninterval_s = 1.0\nprometheus = true\nprometheus_port = {port}\n"
    )
    wav = speech_wav(work / "speech.wav", repeats=12)
    with open(work / "daemon.log", "wb") as log:  # the child writes to its own descriptor
        proc = subprocess.Popen(
            [sys.executable, "-m", "voxnode", "run", "--config", str(cfg), "--file", str(wav), "--stdout"],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            env={**os.environ, "PYTHONMALLOC": "malloc"},
        )
    daemon = ScrapedDaemon(proc, port, work, endpoint)
    reader = threading.Thread(target=daemon.read_events, daemon=True)
    reader.start()
    try:
        assert wait_port(port, timeout=60), daemon.log()
        yield daemon
    finally:
        stop_process(proc, 30)
        reader.join(5)
        if proc.stdout is not None:
            proc.stdout.close()  # read to its end by the reader
        broker.stop()
        endpoint.close()


@dataclass
class PrometheusServer:
    proc: subprocess.Popen
    port: int
    work: Path

    def query(self, expr: str) -> dict:
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        try:
            return json.loads(get(url))
        except urllib.error.HTTPError as e:  # 400 with the parse error in the body
            return json.loads(e.read().decode())

    def log(self) -> str:
        return (self.work / "prometheus.log").read_text(errors="replace")


@pytest.fixture(scope="module")
def prometheus_server(scraped_daemon, tmp_path_factory):
    """A real Prometheus with its own data dir on a free loopback port: job `voxnode` scraping the
    daemon every second, the alert rules of monitoring/prometheus loaded."""
    work = tmp_path_factory.mktemp("prometheus")
    shutil.copy(MONITORING / "prometheus" / "voxnode-alerts.yml", work / "voxnode-alerts.yml")
    (work / "prometheus.yml").write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "rule_files:\n  - voxnode-alerts.yml\n"
        "scrape_configs:\n  - job_name: voxnode\n    static_configs:\n"
        f"      - targets: ['127.0.0.1:{scraped_daemon.port}']\n"
    )
    port = free_port()
    with open(work / "prometheus.log", "wb") as log:  # the child writes to its own descriptor
        proc = subprocess.Popen(
            [
                str(PROMETHEUS),
                f"--config.file={work / 'prometheus.yml'}",
                f"--storage.tsdb.path={work / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=log,
            cwd=work,
        )
    server = PrometheusServer(proc, port, work)
    try:
        end = time.monotonic() + 60
        while time.monotonic() < end and proc.poll() is None:
            try:
                if "Ready" in get(f"http://127.0.0.1:{port}/-/ready", timeout=1):
                    break
            except OSError:
                pass
            time.sleep(0.2)
        else:
            raise AssertionError(f"prometheus did not become ready:\n{server.log()[-3000:]}")
        yield server
    finally:
        stop_process(proc, 20)
