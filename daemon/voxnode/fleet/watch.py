"""Follows every node's retained `{prefix}/+/status` and `{prefix}/+/health` on the broker `[mqtt]`
names. `FleetWatch`, a Component, owns one MQTT connection (paho's network thread) from `start()`
(connect and subscribe within `timeout_s`) to `stop()`.

When have all retained messages arrived? The broker sends them right after the SUBACK, before
anything published later. So after subscribing, the watcher publishes one message to a topic of
its own (`{prefix}/_fleet/{client id}`, subscribed too): once that comes back, everything retained
before it is here. A user the ACL does not let publish there never gets it back; then a quiet
spell after the SUBACK (`QUIET_S`) ends the wait, and `timeout` bounds it in any case.
"""

from __future__ import annotations

import os
import socket
import ssl
import threading
import time

from voxnode.config.mqtt import MqttConfig, sanitize_node_id
from voxnode.errors import VoxnodeError
from voxnode.fleet.nodes import NodeState
from voxnode.fleet.waits import Waits
from voxnode.lifecycle import Component
from voxnode.mqtt.connection import make_paho_client
from voxnode.threads import NamedThread

# Retained messages come back to back; half a second with none after the SUBACK means no more.
QUIET_S = 0.5
KEEPALIVE_S = 30
# How long a stop (Ctrl-C) waits for paho's thread. It leaves at once: the whole exit after Ctrl-C
# took 32-59 ms (load 1.3). Inside a reconnect to a broker gone silent it stayed until its connect
# timed out (--timeout 20: the command exited 18.7 s after Ctrl-C). A read-only watcher loses
# nothing when that thread is left to end with the process.
STOP_S = 1.0


class FleetError(VoxnodeError):
    """The broker cannot be reached, refuses us, or refuses the subscription."""


class FleetWatch(Component):
    def __init__(self, config: MqttConfig, config_name: str, timeout_s: float, waits: Waits | None = None):
        self.config = config
        self.waits = waits or Waits()  # how the caller's thread waits (and takes Ctrl-C)
        self.timeout_s = timeout_s  # to connect and subscribe
        self.config_name = config_name  # for messages: which file's [mqtt] to fix
        self.prefix = config.topic_prefix
        self.where = f"{config.host}:{config.effective_port}"
        self.client_id = f"voxnode-fleet-{sanitize_node_id(socket.gethostname())}-{os.getpid()}"
        self.sync_topic = f"{self.prefix}/_fleet/{self.client_id}"
        self.connected = False
        self._nodes: dict[str, NodeState] = {}
        self._lock = threading.Lock()
        self._answered = threading.Event()  # CONNACK (accepted or not) or a refused subscription
        self._subscribed = threading.Event()
        self._synced = threading.Event()
        self._failure = ""
        self._last_message = time.monotonic()
        # Never the node's own client id: the broker would disconnect the daemon on this machine.
        self.client = make_paho_client(config, self.client_id)
        self.client.on_connect = self._on_connect
        self.client.on_disconnect = self._on_disconnect
        self.client.on_subscribe = self._on_subscribe
        self.client.on_message = self._on_message

    # ---- connection (the caller's thread) ------------------------------------------------------

    def start(self) -> None:
        """Connect and subscribe within `timeout_s` seconds, or raise FleetError saying why. Whatever
        ends it early (an error, Ctrl-C) stops the connection, as stop() does, within STOP_S."""
        timeout = self.timeout_s
        deadline = time.monotonic() + timeout
        self.client.connect_timeout = max(0.5, timeout)
        hint = f"check mqtt.host and mqtt.port in {self.config_name}"
        try:
            with self.waits.interruptible():  # blocks up to `timeout`; paho's thread does not exist yet
                self.client.connect(self.config.host, self.config.effective_port, keepalive=KEEPALIVE_S)
        except ssl.SSLCertVerificationError as e:
            raise FleetError(
                f"MQTT broker {self.where}: TLS certificate not accepted: {e.verify_message} "
                f"(check mqtt.tls_ca in {self.config_name})"
            ) from None
        except ssl.SSLError as e:
            raise FleetError(
                f"MQTT broker {self.where}: TLS handshake failed: {e.reason or e} (is mqtt.tls right?)"
            ) from None
        except TimeoutError:
            raise FleetError(f"MQTT broker {self.where}: no answer within {timeout:g} s ({hint})") from None
        except OSError as e:
            raise FleetError(f"cannot connect to MQTT broker {self.where}: {e.strerror or e} ({hint})") from None
        self.client.loop_start()
        try:
            while not self._answered.is_set():
                if time.monotonic() >= deadline:
                    raise FleetError(f"MQTT broker {self.where}: no answer within {timeout:g} s ({hint})")
                self.waits.wait(deadline - time.monotonic())
            if self._failure:
                raise FleetError(self._failure)
        except BaseException:
            self.stop(time.monotonic() + STOP_S)
            raise

    def wait_retained(self, timeout: float) -> None:
        """Until every retained message has arrived (see the module doc), at most `timeout` s."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not self._synced.is_set():
            if self._failure:
                raise FleetError(self._failure)
            if self._subscribed.is_set() and time.monotonic() - self._last_message >= QUIET_S:
                return
            self.waits.wait(0.05)

    def nodes(self) -> list[NodeState]:
        with self._lock:
            return [
                NodeState(n.node, n.status, n.health, n.previous_health)
                for n in sorted(self._nodes.values(), key=lambda n: n.node)
            ]

    def stop(self, deadline: float) -> None:
        """Disconnect, and wait until `deadline` for paho's thread to leave. It leaves at once, unless
        it is inside a reconnect's connect (a broker gone silent: until `timeout_s`; a host name's
        lookup: unbounded); then it is left behind, a daemon thread that ends with the process.
        paho's loop_stop joins without a bound, so it runs on a thread of its own, joined here."""
        self.client.disconnect()
        leaving = NamedThread(target=self._loop_stop, name="fleet-stop", daemon=True)
        leaving.start()
        leaving.join(max(0.0, deadline - time.monotonic()))

    def _loop_stop(self) -> None:
        try:
            self.client.loop_stop()
        except AttributeError:  # paho 2.2 issue #872: its thread left between loop_stop's check and join
            pass

    # ---- paho's thread ---------------------------------------------------------------------------

    def _on_connect(self, client, userdata, flags, reason_code, properties) -> None:
        if reason_code.is_failure:
            self._failure = (
                f"MQTT broker {self.where} refused the connection: {reason_code} "
                f"(check mqtt.username and mqtt.password/password_file in {self.config_name})"
            )
            self._answer()
            return
        self.connected = True
        self._subscribed.clear()
        client.subscribe([(f"{self.prefix}/+/status", 1), (f"{self.prefix}/+/health", 1), (self.sync_topic, 0)])
        self._answer()

    def _answer(self) -> None:
        self._answered.set()
        self.waits.wake()

    def _on_disconnect(self, client, userdata, flags, reason_code, properties) -> None:
        self.connected = False

    def _on_subscribe(self, client, userdata, mid, reason_codes, properties) -> None:
        refused = [rc for rc in reason_codes[:2] if rc.is_failure]
        if refused:
            self._failure = (
                f"MQTT broker {self.where} refused the subscription to {self.prefix}/+/status and "
                f"{self.prefix}/+/health: {refused[0]} (the broker's ACL must let this user read them)"
            )
            self._answer()
            return
        self._last_message = time.monotonic()
        self._subscribed.set()
        client.publish(self.sync_topic, b"sync", qos=0)

    def _on_message(self, client, userdata, msg) -> None:
        self._last_message = time.monotonic()
        if msg.topic == self.sync_topic:
            self._synced.set()
            self.waits.wake()
            return
        rest = msg.topic[len(self.prefix) + 1 :].split("/")
        if len(rest) != 2 or rest[1] not in ("status", "health"):
            return
        node, kind = rest
        with self._lock:
            state = self._nodes.setdefault(node, NodeState(node))
            if kind == "status":
                state.status = msg.payload or None  # an empty retained message clears it
            elif not msg.payload:
                state.health = None
            else:
                state.set_health(msg.payload)
            if state.status is None and state.health is None:
                del self._nodes[node]
