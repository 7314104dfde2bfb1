"""A capture device whose open blocks must not stop the node (issue 27): a real daemon with two
streams, one on a paced FIFO microphone and one on a `type file` PCM whose infile FIFO has no writer
(its open blocks inside snd_pcm_open). Before: no READY, no watchdog ping, /metrics timed out, and
SIGTERM waited for a writer to appear. Now the blocked stream is reported, the other one captures,
/metrics answers, and SIGTERM is honoured within service.stop_timeout_s."""

from __future__ import annotations

import os
import re
import signal
import time
import urllib.request
from pathlib import Path

import pytest

from tests.alsa_env import alsa_file_pcm
from tests.helpers import wait_until
from tests.systemd.helpers import NotifySocket, PacedMic, has, start_daemon, stop
from voxnode.mqtt.localbroker import free_port
from voxnode.process_stop import stop_process

pytest.importorskip("prometheus_client")

STOP_TIMEOUT_S = 2.0


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        return r.read().decode()


def frames(text: str, stream: str) -> float:
    m = re.search(r'^voxnode_stream_frames_total\{[^}]*stream="' + stream + r'"[^}]*\} (\S+)$', text, re.M)
    return float(m.group(1)) if m else -1.0


def test_a_device_that_blocks_on_open_leaves_the_node_running_and_stoppable(tmp_path):
    (tmp_path / "alsa").mkdir()
    live, blocked = tmp_path / "live.fifo", tmp_path / "block.fifo"
    os.mkfifo(live)
    os.mkfifo(blocked)
    (tmp_path / "alsa" / "asoundrc").write_text(alsa_file_pcm("vx_live", live) + alsa_file_pcm("vx_block", blocked))
    port = free_port()
    cfg = tmp_path / "config.toml"
    cfg.write_text(
        f"[service]\nstop_timeout_s = {STOP_TIMEOUT_S}\n"
        f"[health]\nprometheus = true\nprometheus_port = {port}\n"
        '[[streams]]\nname = "live"\ndevice = "vx_live"\n'
        '[[streams]]\nname = "stuck"\ndevice = "vx_block"\n'
    )
    mic = PacedMic(live)  # opened read-write: the live stream's open never waits
    notify = NotifySocket(tmp_path)
    p = start_daemon(
        ["--config", str(cfg)], notify, tmp_path, watchdog_s=2.0, extra_env={"XDG_CONFIG_HOME": str(tmp_path)}
    )
    try:
        notify.wait_for(has("READY", "1"), timeout=30)  # before: never (the main thread was frozen)
        t = time.monotonic()
        notify.wait_for(lambda m: has("WATCHDOG")(m) and m.t > t, timeout=5)
        first = scrape(port)
        assert wait_until(lambda: frames(scrape(port), "live") > frames(first, "live") + 10, timeout=10)
        text = scrape(port)
        assert re.search(r'^voxnode_stream_state\{[^}]*state="backoff",stream="stuck"\} 1\.0$', text, re.M), text
        assert re.search(r'^voxnode_stream_state\{[^}]*state="running",stream="live"\} 1\.0$', text, re.M), text
        # As `top -H` shows the node (voxnode/threads.py): the blocked open is its own thread, by name.
        names = {Path(d, "comm").read_text().strip() for d in Path(f"/proc/{p.pid}/task").iterdir()}
        named = {"open-stuck", "capture-stuck", "capture-live", "stream-live", "decode-0", "metrics-http"}
        assert named <= names, names
        sent = time.monotonic()
        rc = stop(p, timeout=STOP_TIMEOUT_S + 10)
        took = time.monotonic() - sent
    finally:
        # A test that failed before its stop: the daemon is killed and reaped, never left a zombie or
        # still running while the FIFOs and folder it uses go.
        stop_process(p, 0.0, signal.SIGKILL)
        mic.close()
        notify.close()
    assert rc == 0
    assert took < STOP_TIMEOUT_S + 3, took  # generous: the bound is stop_timeout_s, plus process exit
    log = (tmp_path / "stderr.log").read_text()
    assert "stream stuck: ALSA device 'vx_block' has not finished opening" in log, log
    assert "Traceback" not in log, log
