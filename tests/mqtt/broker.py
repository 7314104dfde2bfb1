"""A real Mosquitto for the tests: own ports on loopback, optional password auth + ACL and TLS.

Recipes and gotchas: /work/shared/notes/test-recipes.md section 2 (`user root`
so the server key stays readable; log to a file; SIGKILL loses all state).
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from voxnode.mqtt.localbroker import free_port, wait_running
from voxnode.process_stop import stop_process

MOSQUITTO = shutil.which("mosquitto") or "/usr/sbin/mosquitto"


def make_ca(folder: Path) -> dict[str, Path]:
    """A test CA and a server certificate for localhost/127.0.0.1, made by openssl now (about 1 s)."""
    folder.mkdir(parents=True, exist_ok=True)
    ca_key, ca_crt = folder / "ca.key", folder / "ca.crt"
    key, csr, crt = folder / "server.key", folder / "server.csr", folder / "server.crt"
    ext = folder / "san.ext"
    ext.write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")

    def run(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True)

    run(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        ca_key,
        "-out",
        ca_crt,
        "-days",
        "30",
        "-subj",
        "/CN=voxnode-test-ca",
    )
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=localhost")
    run(
        "x509",
        "-req",
        "-in",
        csr,
        "-CA",
        ca_crt,
        "-CAkey",
        ca_key,
        "-CAcreateserial",
        "-out",
        crt,
        "-days",
        "30",
        "-extfile",
        ext,
    )
    # A second, unrelated CA: a client trusting it must refuse the broker.
    other_key, other_crt = folder / "other-ca.key", folder / "other-ca.crt"
    run(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        other_key,
        "-out",
        other_crt,
        "-days",
        "30",
        "-subj",
        "/CN=someone-else",
    )
    return {"ca": ca_crt, "cert": crt, "key": key, "other_ca": other_crt}


class Broker:
    def __init__(
        self,
        work: Path,
        *,
        users: dict[str, str] | None = None,
        acl: str | None = None,
        tls: dict[str, Path] | None = None,
        host: str = "127.0.0.1",
        netns: str | None = None,
        persistence: bool = False,
        extra_port: bool = False,
    ):
        self.work = work
        self.work.mkdir(parents=True, exist_ok=True)
        self.host = host
        self.port = free_port()
        self.extra_port = free_port() if extra_port else None  # a second listener, e.g. not black-holed
        self.netns = netns
        self.proc: subprocess.Popen | None = None
        # Its log goes to its stderr, appended to broker.log (as LocalBroker's): a config or bind error
        # it reports before it can log is in the same file.
        lines = ["per_listener_settings false", "log_dest stderr", "log_type all", "user root"]
        if persistence:
            (work / "data").mkdir(exist_ok=True)
            # Saved every second, so even a SIGKILLed broker comes back with the monitor's subscription.
            lines += ["persistence true", f"persistence_location {work / 'data'}/", "autosave_interval 1"]
        else:
            lines.append("persistence false")
        if users:
            pw = work / "passwd"
            pw.write_text("")
            for user, password in users.items():
                subprocess.run(["mosquitto_passwd", "-b", str(pw), user, password], check=True, capture_output=True)
            lines += ["allow_anonymous false", f"password_file {pw}"]
        else:
            lines.append("allow_anonymous true")
        if acl is not None:
            (work / "acl").write_text(acl)
            lines.append(f"acl_file {work / 'acl'}")
        lines.append(f"listener {self.port} {host}")
        if self.extra_port:
            lines.append(f"listener {self.extra_port} {host}")
        if tls:
            lines += [f"cafile {tls['ca']}", f"certfile {tls['cert']}", f"keyfile {tls['key']}"]
        (work / "mosquitto.conf").write_text("\n".join(lines) + "\n")

    def start(self) -> Broker:
        cmd = [MOSQUITTO, "-c", str(self.work / "mosquitto.conf")]
        if self.netns:
            cmd = ["ip", "netns", "exec", self.netns, *cmd]
        log = self.work / "broker.log"
        since = log.stat().st_size if log.exists() else 0  # a restart: what it said before does not count
        with open(log, "ab") as out:  # the child has its own descriptor
            self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=out)
        # Its own "running" line (every listener open), not a port's answer: another program's socket
        # answers too; and one that exits (a taken port) fails at once, not after a timeout.
        failure = wait_running(self.proc, log, f"{self.host}:{self.port}", self.work / "mosquitto.conf", since)
        if failure is not None:
            self.stop()
            raise RuntimeError(failure)
        return self

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is not None:
            stop_process(self.proc, 5, sig)
        self.proc = None

    def log(self) -> str:
        try:
            return (self.work / "broker.log").read_text()
        except OSError:
            return ""


class Monitor:
    """A subscriber that records everything, reconnects fast and resubscribes on every connect
    (a SIGKILLed broker forgets sessions and subscriptions)."""

    def __init__(
        self,
        broker: Broker,
        topics=("voxnode/#", "homeassistant/#"),
        *,
        username=None,
        password=None,
        tls_ca: Path | None = None,
        client_id: str = "monitor",
        port: int | None = None,
    ):
        self.messages: list[tuple[str, bytes, bool]] = []
        self.lock = threading.Lock()
        self.connected = threading.Event()
        self.topics = topics
        c = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv5)
        if username:
            c.username_pw_set(username, password)
        if tls_ca:
            c.tls_set(ca_certs=str(tls_ca))
        c.reconnect_delay_set(min_delay=0.1, max_delay=0.3)
        c.on_connect = self._on_connect
        c.on_disconnect = lambda *a: self.connected.clear()
        c.on_message = self._on_message
        props = Properties(PacketTypes.CONNECT)
        props.SessionExpiryInterval = 300
        c.connect_async(broker.host, port or broker.port, keepalive=5, clean_start=False, properties=props)
        self.client = c
        c.loop_start()
        if not self.connected.wait(5):
            raise RuntimeError("monitor could not connect")

    def _on_connect(self, client, userdata, flags, rc, props):
        if rc.is_failure:
            return
        result, _ = client.subscribe([(t, 1) for t in self.topics])
        self.connected.set()

    def _on_message(self, client, userdata, msg):
        with self.lock:
            self.messages.append((msg.topic, msg.payload, bool(msg.retain)))

    def on(self, topic: str) -> list[bytes]:
        with self.lock:
            return [p for t, p, _ in self.messages if t == topic]

    def json_on(self, topic: str) -> list[dict]:
        return [json.loads(p) for p in self.on(topic)]

    def matching(self, suffix: str) -> list[tuple[str, bytes, bool]]:
        with self.lock:
            return [m for m in self.messages if m[0].endswith(suffix)]

    def wait_for(self, cond, timeout: float = 10.0) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if cond():
                return True
            time.sleep(0.05)
        return cond()

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def retained(broker: Broker, topic: str, timeout: float = 3.0, **auth) -> bytes | None:
    """What a new subscriber gets as the retained message on `topic` (None if nothing is retained).

    Nothing retained is known from the broker itself, not from a wait running out: Mosquitto queues a
    subscription's retained message right behind its SUBACK, while it handles that SUBSCRIBE, and
    answers the client's packets in order, so by the SUBACK of a second SUBSCRIBE sent after the first
    one's (to a topic of its own; refused by an ACL it is still answered) the retained message has
    arrived if there is one. `timeout` bounds a broker that does not answer. (A 3 s wait for every
    absent message was 3 s of the suite's wall time each.)"""
    got: list[bytes] = []
    done = threading.Event()
    client_id = f"peek-{time.monotonic_ns()}"
    c = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv5)
    if auth.get("username"):
        c.username_pw_set(auth["username"], auth.get("password"))
    if auth.get("tls_ca"):
        c.tls_set(ca_certs=str(auth["tls_ca"]))

    def on_message(cl, ud, msg):
        if msg.retain:
            got.append(msg.payload)
        done.set()

    subacks = []

    def on_subscribe(cl, ud, mid, reason_codes, pr):
        subacks.append(mid)
        if len(subacks) == 1:
            cl.subscribe(f"{client_id}/answered", 1)  # answered after `topic`'s retained message
        else:
            done.set()

    c.on_connect = lambda cl, ud, fl, rc, pr: cl.subscribe(topic, 1)
    c.on_subscribe = on_subscribe
    c.on_message = on_message
    c.connect(broker.host, broker.port)
    c.loop_start()
    done.wait(timeout)
    c.disconnect()
    c.loop_stop()
    return got[0] if got else None
