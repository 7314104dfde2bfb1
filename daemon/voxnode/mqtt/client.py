"""The MQTT connection and the publisher thread that moves finals from the spool to the broker.

Threads:
- the caller (pipeline threads) only puts events into a bounded Mailbox;
- the publisher thread owns the spool: it stores each final (durable), hands
  at most `inflight_window` of them to paho, and deletes them on PUBACK;
- paho's network thread connects, reconnects with backoff forever, and
  resends what it was handed (with the same packet) after a reconnect; its
  callbacks only post to the Mailbox or publish small retained messages.

So the spool is the source of truth across restarts, paho's queue across
reconnects, and neither grows without bound.
"""

from __future__ import annotations

import json
import logging
import os
import ssl
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion, MQTTErrorCode

from voxnode.config.mqtt import MqttConfig
from voxnode.errors import MqttConfigError, SpoolError
from voxnode.mqtt.credentials import read_password
from voxnode.mqtt.mailbox import Mailbox
from voxnode.mqtt.spool import Spool
from voxnode.mqtt.status import OFFLINE, ONLINE
from voxnode.mqtt.topics import Topics

log = logging.getLogger("voxnode.mqtt")

FINALS_QUEUE = 10000  # finals waiting for the publisher thread (seconds of work at worst)
PARTIALS_QUEUE = 100  # partials are disposable: when the link is slow, drop them first
CLOSE_ACK_WAIT_S = 3.0


def dumps(obj: dict) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


def make_paho_client(c: MqttConfig, client_id: str) -> mqtt.Client:
    """A paho client with the configured protocol, credentials and TLS (not yet connected).

    Raises MqttConfigError naming the setting when a password or TLS file cannot be used."""
    protocol = mqtt.MQTTv5 if c.protocol == "5" else mqtt.MQTTv311
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id, protocol=protocol)
    if c.username:
        client.username_pw_set(c.username, read_password(c))
    if c.tls:
        for key in ("tls_ca", "tls_cert", "tls_key"):
            path = getattr(c, key)
            if path and not os.access(path, os.R_OK):
                raise MqttConfigError(f"mqtt.{key} = {path!r}: file does not exist or is not readable")
        try:
            client.tls_set(
                ca_certs=c.tls_ca or None,
                certfile=c.tls_cert or None,
                keyfile=c.tls_key or None,
                cert_reqs=ssl.CERT_REQUIRED,
            )
        except (ssl.SSLError, OSError, ValueError) as e:
            raise MqttConfigError(f"mqtt TLS files (tls_ca/tls_cert/tls_key) cannot be loaded: {e}") from None
        client.tls_insecure_set(c.tls_insecure)
    return client


@dataclass
class MqttStats:
    connected: bool = False
    connects: int = 0
    disconnects: int = 0
    published: int = 0  # finals acknowledged by the broker
    rejected: int = 0  # finals the broker refused (v5 PUBACK error, e.g. ACL); they stay in the spool
    partials_dropped: int = 0
    finals_refused: int = 0  # finals the mailbox could not take (publisher stalled); logged as errors
    last_error: str = ""
    last_connect_wall: float = 0.0
    inflight: int = 0
    bad_events: int = 0  # events the publisher could not handle (a bug upstream); logged with a traceback


class MqttPublisher:
    def __init__(
        self,
        config: MqttConfig,
        topics: Topics,
        spool: Spool,
        *,
        model_name: Callable[[], str] = lambda: "",
        on_command: Callable[[bytes], None] = lambda payload: None,
        on_connected: Callable[[], None] = lambda: None,
        announcements: Callable[[], list[tuple[str, bytes]]] = lambda: [],
        status: Callable[[str], bytes] = lambda state: state.encode(),
    ):
        self.config = config
        self.topics = topics
        self.spool = spool
        self.stats = MqttStats()
        self._model_name = model_name
        self._on_command = on_command
        self._on_connected = on_connected
        self._announcements = announcements
        self._status = status  # "online"/"offline" -> the status payload (mqtt/status.py)
        self._mailbox = Mailbox({"final": FINALS_QUEUE, "partial": PARTIALS_QUEUE})
        self._inflight: dict[int, int] = {}  # paho mid -> spool seq; publisher thread only
        self._handed_up_to = 0  # highest seq handed to paho; publisher thread only
        self._thread = threading.Thread(target=self._run, name="mqtt-publisher", daemon=True)
        self._stopped = threading.Event()
        self._last_logged_failure = ""
        self.client = self._make_client()

    # ---- setup -------------------------------------------------------------------------------

    def _make_client(self) -> mqtt.Client:
        c = self.config
        client = make_paho_client(c, c.client_id or f"voxnode-{self.topics.node}")
        # Broker restarts fire the will too, so on_connect republishes "online" every time.
        client.will_set(self.topics.status, self._status(OFFLINE), qos=1, retain=True)
        # paho's annotations say int; it computes with the floats the config allows (0.1 s and up).
        client.reconnect_delay_set(min_delay=c.reconnect_min_s, max_delay=c.reconnect_max_s)  # type: ignore[arg-type]
        client.max_inflight_messages_set(min(c.inflight_window, 65535))
        client.on_connect = self._on_connect
        client.on_connect_fail = self._on_connect_fail
        client.on_disconnect = self._on_disconnect
        client.on_publish = self._on_publish
        client.on_message = self._on_message
        return client

    def start(self) -> None:
        self._thread.start()
        self.client.connect_async(self.config.host, self.config.effective_port, keepalive=self.config.keepalive)
        self.client.loop_start()
        log.info(
            "MQTT: connecting to %s:%d as %s (topics %s/...), spool %s with %d unsent final(s)",
            self.config.host,
            self.config.effective_port,
            self.client._client_id.decode(),
            self.topics.base,
            self.spool.path,
            self.spool.count,
        )

    # ---- producer side (any thread, never blocks) ---------------------------------------------

    def submit_final(self, event: dict) -> bool:
        if self._mailbox.put("final", event):
            return True
        self.stats.finals_refused += 1
        log.error(
            "MQTT: publisher queue full (%d finals waiting); final %s of stream %s is NOT spooled",
            FINALS_QUEUE,
            event.get("id"),
            event.get("stream"),
        )
        return False

    def submit_partial(self, event: dict) -> None:
        if not self._mailbox.put("partial", event):
            self.stats.partials_dropped += 1

    def publish_now(self, topic: str, payload: bytes, qos: int = 0, retain: bool = False) -> bool:
        """Best-effort publish of a status-like message: skipped while disconnected (it would be stale)."""
        if not self.stats.connected:
            return False
        info = self.client.publish(topic, payload, qos=qos, retain=retain)
        return info.rc == MQTTErrorCode.MQTT_ERR_SUCCESS

    @property
    def backlog(self) -> int:
        return self.spool.count + self._mailbox.depth()

    # ---- paho callbacks (paho's thread) --------------------------------------------------------

    def _on_connect(self, client, userdata, flags, reason_code, properties) -> None:
        where = f"{self.config.host}:{self.config.effective_port}"
        if reason_code.is_failure:
            hint = {
                "Not authorized": "check mqtt.username and mqtt.password/password_file and the broker's ACL",
                "Bad user name or password": "check mqtt.username and mqtt.password/password_file",
                "Client identifier not valid": "set mqtt.client_id to something the broker accepts",
            }.get(str(reason_code), "see the broker's log")
            self._report_failure(f"MQTT broker {where} refused the connection: {reason_code} ({hint}); retrying")
            return
        self.stats.connected = True
        self.stats.connects += 1
        self.stats.last_connect_wall = time.time()
        self._last_logged_failure = ""
        log.info(
            "MQTT: connected to %s (session present: %s); %d final(s) waiting",
            where,
            flags.session_present,
            self.spool.count,
        )
        client.publish(self.topics.status, self._status(ONLINE), qos=1, retain=True)
        client.subscribe([(self.topics.cmd, 1), (self.topics.ha_status, 1)])
        for topic, payload in self._announcements():
            client.publish(topic, payload, qos=1, retain=True)
        self._mailbox.put("connected")
        try:
            self._on_connected()
        except Exception:  # noqa: BLE001 - a hook must not kill paho's thread
            log.exception("MQTT: on_connected hook failed")

    def _on_connect_fail(self, client, userdata) -> None:
        err = sys.exc_info()[1]
        where = f"{self.config.host}:{self.config.effective_port}"
        if isinstance(err, ssl.SSLCertVerificationError):
            why = f"TLS certificate not accepted: {err.verify_message} (check mqtt.tls_ca and the broker's host name)"
        elif isinstance(err, ssl.SSLError):
            why = f"TLS handshake failed: {err.reason or err} (is the port a TLS listener? is mqtt.tls right?)"
        elif isinstance(err, OSError):
            why = err.strerror or str(err) or type(err).__name__
        else:
            why = "connection failed"
        self._report_failure(
            f"MQTT: cannot connect to {where}: {why}; retrying with backoff (up to {self.config.reconnect_max_s:.0f} s)"
        )

    def _report_failure(self, message: str) -> None:
        self.stats.last_error = message
        # A broker that stays away must not flood the journal: log each new reason once.
        if message != self._last_logged_failure:
            log.error("%s", message)
            self._last_logged_failure = message
        else:
            log.debug("%s", message)

    def _on_disconnect(self, client, userdata, flags, reason_code, properties) -> None:
        was = self.stats.connected
        self.stats.connected = False
        if was:  # paho can report one loss twice (keep-alive timeout, then socket close)
            self.stats.disconnects += 1
            if not self._stopped.is_set():
                self.stats.last_error = f"disconnected: {reason_code}"
                log.warning(
                    "MQTT: lost the broker (%s); %d final(s) kept in the spool, reconnecting",
                    reason_code,
                    self.spool.count,
                )

    def _on_publish(self, client, userdata, mid, reason_code, properties) -> None:
        self._mailbox.put("ack", (mid, reason_code))

    def _on_message(self, client, userdata, msg) -> None:
        try:
            if msg.topic == self.topics.cmd:
                self._on_command(msg.payload)
            elif msg.topic == self.topics.ha_status and msg.payload.strip().lower() == b"online":
                log.info("MQTT: Home Assistant came online; announcing the device again")
                for topic, payload in self._announcements():
                    client.publish(topic, payload, qos=1, retain=True)
                self._on_connected()
        except Exception:  # noqa: BLE001 - whatever arrives must not kill paho's thread
            log.exception("MQTT: handling a message on %s failed", msg.topic)

    # ---- publisher thread ----------------------------------------------------------------------

    def _run(self) -> None:
        stopping = False
        while True:
            items = self._mailbox.take_all(timeout=0.5)
            acked: list[int] = []
            for kind, item in items:
                try:
                    if kind == "final":
                        self._spool_final(item)
                    elif kind == "partial":
                        self._publish_partial(item)
                    elif kind == "ack":
                        seq = self._ack(*item)
                        if seq is not None:
                            acked.append(seq)
                    elif kind == "stop":
                        stopping = True
                except Exception:  # noqa: BLE001 - one bad event must not stop every later final
                    self.stats.bad_events += 1
                    log.exception("MQTT: cannot publish %s event %r; skipped", kind, item)
            try:
                self.spool.ack(acked)
            except SpoolError as e:
                log.error("%s", e)
            self.stats.published += len(acked)
            self._fill_window()
            self.stats.inflight = len(self._inflight)
            if stopping:
                self._stopped.set()
                return

    def _spool_final(self, event: dict) -> None:
        seq = self.spool.next_seq
        payload = {**event, "seq": seq}
        payload.setdefault("model", self._model_name())
        try:
            dropped = self.spool.append(seq, self.topics.transcript(event["stream"]), dumps(payload))
        except SpoolError as e:
            # Nowhere durable to keep it: still try to deliver it while this process lives.
            log.error("%s; publishing final %s without a durable copy", e, event.get("id"))
            self.client.publish(self.topics.transcript(event["stream"]), dumps(payload), qos=self.config.qos)
            return
        if dropped:
            log.error(
                "MQTT spool full (%d finals): dropped the %d oldest unsent final(s), seq %d..%d "
                "(%d dropped in total); raise mqtt.spool_max_messages or fix the broker link",
                self.spool.max_messages,
                len(dropped),
                dropped[0],
                dropped[-1],
                self.spool.dropped_total,
            )

    def _publish_partial(self, event: dict) -> None:
        if self.stats.connected:
            payload = dict(event)
            payload.setdefault("model", self._model_name())
            self.client.publish(self.topics.partial(event["stream"]), dumps(payload), qos=0)
        else:
            self.stats.partials_dropped += 1

    def _ack(self, mid: int, reason_code) -> int | None:
        seq = self._inflight.pop(mid, None)
        if seq is None:
            return None  # a status/discovery message, not a final
        if reason_code is not None and getattr(reason_code, "is_failure", False):
            self.stats.rejected += 1
            log.error(
                "MQTT: broker refused final seq %d on %s: %s (check the broker's ACL for this user); "
                "it stays in the spool and is retried after the next restart",
                seq,
                self.topics.base,
                reason_code,
            )
            return None
        return seq

    def _fill_window(self) -> None:
        room = self.config.inflight_window - len(self._inflight)
        if room <= 0 or self.spool.count == 0:
            return
        for m in self.spool.after(self._handed_up_to, room):
            # QoS 0 finals (mqtt.qos = 0) get no PUBACK: they leave the spool once handed over.
            info = self.client.publish(m.topic, m.payload, qos=self.config.qos)
            if info.rc == MQTTErrorCode.MQTT_ERR_QUEUE_SIZE:
                break
            self._handed_up_to = m.seq
            if self.config.qos == 0:
                self.spool.ack([m.seq])
            else:
                self._inflight[info.mid] = m.seq

    # ---- shutdown ------------------------------------------------------------------------------

    def close(self) -> None:
        """Spool whatever is queued, give in-flight finals a moment to be acknowledged, say offline."""
        self._mailbox.put("stop")
        self._thread.join(10.0)
        if self.stats.connected:
            info = self.client.publish(self.topics.status, self._status(OFFLINE), qos=1, retain=True)
            deadline = time.monotonic() + CLOSE_ACK_WAIT_S
            while time.monotonic() < deadline and self.stats.connected:
                self._drain_acks_after_stop()
                try:
                    if not self._inflight and info.is_published():
                        break
                except RuntimeError:  # the link dropped meanwhile: the will says offline
                    break
                time.sleep(0.02)
        self.client.disconnect()
        self.client.loop_stop()
        self._drain_acks_after_stop()
        if self.spool.count:
            log.warning(
                "MQTT: %d final(s) not yet acknowledged stay in %s and are sent after the next start",
                self.spool.count,
                self.spool.path,
            )
        self.spool.close()

    def _drain_acks_after_stop(self) -> None:
        # The publisher thread is gone; its state is ours now.
        acked = []
        for kind, item in self._mailbox.take_all(timeout=0):
            if kind == "ack":
                seq = self._ack(*item)
                if seq is not None:
                    acked.append(seq)
        try:
            self.spool.ack(acked)
        except SpoolError as e:
            log.error("%s", e)
        self.stats.published += len(acked)
