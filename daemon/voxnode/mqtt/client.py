"""The MQTT connection and the publisher thread that moves finals from the spool to the broker.

Threads:
- the daemon's sequencer stores each final in the spool (voxnode.delivery: that
  gives it its seq) before the output sees it; the output only wakes this thread
  (or, for a final the spool could not store, hands it over in a bounded Mailbox);
- the publisher thread hands at most `inflight_window` spooled finals to paho,
  in seq order, and deletes them on PUBACK. A final the broker refuses stays in
  the spool and holds back the later ones until a retry is accepted
  (delivery/retry.py), so fixing the ACL delivers everything in seq order;
- paho's network thread connects, reconnects with backoff forever, and
  resends what it was handed (with the same packet) after a reconnect; its
  callbacks only post to the Mailbox or publish small retained messages.

So the spool is the source of truth across restarts, paho's queue across
reconnects, and neither grows without bound.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from collections.abc import Callable

import paho.mqtt.client as mqtt
from paho.mqtt.enums import MQTTErrorCode

from voxnode.config.mqtt import MqttConfig
from voxnode.delivery.cursor import SpoolCursor
from voxnode.delivery.retry import HeldFinal
from voxnode.events import dumps
from voxnode.lifecycle import Component
from voxnode.mqtt.connection import connect_failure, make_paho_client, refusal_hint, warn_about_protocol
from voxnode.mqtt.mailbox import Mailbox
from voxnode.mqtt.stats import MqttStats
from voxnode.mqtt.status import OFFLINE, ONLINE
from voxnode.mqtt.topics import Topics
from voxnode.threads import NamedThread

log = logging.getLogger("voxnode.mqtt")

FINALS_QUEUE = 10000  # finals without a durable copy held in memory for the broker, at most
PARTIALS_QUEUE = 100  # partials are disposable: when the link is slow, drop them first
CLOSE_SPOOL_S, CLOSE_ACK_WAIT_S = 10.0, 3.0  # at stop: to spool what is queued; for acknowledgements
UNSTORED = 0  # the in-flight "seq" of a final the spool could not store (real seqs start at 1)


class MqttPublisher(Component):
    def __init__(
        self,
        config: MqttConfig,
        topics: Topics,
        *,
        model_name: Callable[[], str] = lambda: "",
        subscriptions: tuple[str, ...] = (),
        sync_topic: str | None = None,
        on_message: Callable[[str, bytes, bool], None] = lambda topic, payload, retained: None,
        on_connected: Callable[[], None] = lambda: None,
        status: Callable[[str], bytes] = lambda state: state.encode(),
    ):
        self.config = config
        self.topics = topics
        self.cursor: SpoolCursor | None = None  # the spool's finals not yet at the broker; set before start()
        self.stats = MqttStats()
        self._model_name = model_name
        self._subscriptions = tuple(subscriptions)  # subscribed (QoS 1) on every connect
        self._sync_topic = sync_topic  # published (empty) right after subscribing; see Topics.sync
        self._on_message_hook = on_message  # paho's thread: must only queue
        self._on_connected = on_connected
        self._status = status  # "online"/"offline" -> the status payload (mqtt/status.py)
        # "stored": a wake-up (one pending is enough); "unstored": finals the spool could not keep.
        self._mailbox = Mailbox({"stored": 1, "unstored": FINALS_QUEUE, "partial": PARTIALS_QUEUE})
        # Publisher thread only:
        self._inflight: dict[int, int] = {}  # paho mid -> spool seq (UNSTORED for a final from memory)
        self._handed_up_to = 0  # spooled finals up to here were handed to paho (or are held, below)
        self._held = HeldFinal(config.reconnect_min_s, config.reconnect_max_s)  # the oldest refused final
        self._thread = NamedThread(target=self._run, name="mqtt-publisher", daemon=True)
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
        warn_about_protocol(self.config)
        self._thread.start()
        # No MQTT 5 Maximum Packet Size: Mosquitto 2.0.11 (Debian 12) drops an oversized QoS 1 message but
        # keeps it in flight for ever, and after 20 of them no command reaches us at all (seen in
        # tests/reliability/test_bounded_input.py). Oversized commands are refused before queueing instead.
        self.client.connect_async(self.config.host, self.config.effective_port, keepalive=self.config.keepalive)
        self.client.loop_start()
        c, spool = self.config, self.cursor.spool.path if self.cursor is not None else "none"
        log.info(
            "MQTT: connecting to %s:%d as %s (topics %s/...), spool %s with %d unsent final(s)",
            *(c.host, c.effective_port, self.client._client_id.decode(), self.topics.base, spool, self._spooled),
        )

    @property
    def _spooled(self) -> int:  # the finals in the spool MQTT has not delivered
        return self.cursor.count if self.cursor is not None else 0

    # ---- producer side (any thread, never blocks) ---------------------------------------------

    def submit_stored(self) -> None:
        """A final was stored in the spool (voxnode.delivery): send it when the window has room."""
        self._mailbox.put("stored")

    def submit_unstored(self, event: dict) -> bool:
        """A final the spool could not store (no seq): published from memory, bounded."""
        if self._mailbox.put("unstored", event):
            return True
        return self._refuse_unstored(event)

    def _refuse_unstored(self, event: dict) -> bool:
        self.stats.finals_refused += 1
        log.error(
            "MQTT: %d finals without a durable copy already wait for the broker; final %s of stream %s is dropped",
            FINALS_QUEUE,
            event.get("id"),
            event.get("stream"),
        )
        return False

    def submit_partial(self, event: dict) -> None:
        if not self._mailbox.put("partial", event):
            self.stats.partials_dropped += 1

    def publish_now(self, topic: str, payload: bytes | str, qos: int = 0, retain: bool = False) -> bool:
        """Best-effort publish of a status-like message: skipped while disconnected (it would be stale)."""
        if not self.stats.connected:
            return False
        info = self.client.publish(topic, payload, qos=qos, retain=retain)
        return info.rc == MQTTErrorCode.MQTT_ERR_SUCCESS

    @property
    def backlog(self) -> int:
        return self._spooled + self._mailbox.depth("unstored") + self._unstored_inflight

    @property
    def _unstored_inflight(self) -> int:
        return sum(1 for seq in list(self._inflight.values()) if seq == UNSTORED)

    # ---- paho callbacks (paho's thread) --------------------------------------------------------

    def _on_connect(self, client, userdata, flags, reason_code, properties) -> None:
        where = f"{self.config.host}:{self.config.effective_port}"
        if reason_code.is_failure:
            hint = refusal_hint(reason_code)
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
            self._spooled,
        )
        client.publish(self.topics.status, self._status(ONLINE), qos=1, retain=True)
        if self._subscriptions:
            client.subscribe([(topic, 1) for topic in self._subscriptions])
        if self._sync_topic:
            client.publish(self._sync_topic, b"", qos=1)
        self._mailbox.put("connected")
        try:
            self._on_connected()
        except Exception:  # noqa: BLE001 - a hook must not kill paho's thread
            log.exception("MQTT: on_connected hook failed")

    def _on_connect_fail(self, client, userdata) -> None:
        where = f"{self.config.host}:{self.config.effective_port}"
        why = connect_failure(sys.exc_info()[1])
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
                    self._spooled,
                )

    def _on_publish(self, client, userdata, mid, reason_code, properties) -> None:
        self._mailbox.put("ack", (mid, reason_code))

    def _on_message(self, client, userdata, msg) -> None:
        try:
            self._on_message_hook(msg.topic, msg.payload, bool(msg.retain))
        except Exception:  # noqa: BLE001 - whatever arrives must not kill paho's thread
            log.exception("MQTT: handling a message on %s failed", msg.topic)

    # ---- publisher thread ----------------------------------------------------------------------

    def _run(self) -> None:
        stopping = False
        while True:
            wait = 0.5
            retry_in = self._held.retry_in_s()
            if retry_in is not None:
                wait = min(wait, max(0.01, retry_in))
            items = self._mailbox.take_all(timeout=wait)
            acked: list[int] = []
            for kind, item in items:
                try:
                    if kind == "unstored":
                        self._publish_unstored(item)
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
            self._ack_spooled(acked)  # a spool that cannot write keeps them: logged there, sent again after a restart
            self.stats.published += len(acked)
            self._fill_window()
            self.stats.inflight = len(self._inflight)
            self.stats.held_seq = self._held.seq
            retry_in = self._held.retry_in_s()
            self.stats.retry_in_s = round(retry_in, 1) if retry_in is not None else None
            if stopping:
                self._stopped.set()
                return

    def _publish_unstored(self, event: dict) -> None:
        if self._unstored_inflight >= FINALS_QUEUE:
            self._refuse_unstored(event)
            return
        info = self.client.publish(self.topics.transcript(event["stream"]), dumps(event), qos=self.config.qos)
        if self.config.qos and info.rc != MQTTErrorCode.MQTT_ERR_QUEUE_SIZE:
            self._inflight[info.mid] = UNSTORED

    def _publish_partial(self, event: dict) -> None:
        if self.stats.connected:
            payload = dict(event)
            payload.setdefault("model", self._model_name())
            self.client.publish(self.topics.partial(event["stream"]), dumps(payload), qos=0)
        else:
            self.stats.partials_dropped += 1

    def _ack(self, mid: int, reason_code) -> int | None:
        """A PUBACK: the seq to delete from the spool, or None (refused, from memory, or not a final)."""
        seq = self._inflight.pop(mid, None)
        if seq is None:
            return None  # a status/discovery message, not a final
        refused = reason_code is not None and getattr(reason_code, "is_failure", False)
        if seq == UNSTORED:
            if refused:
                self.stats.rejected += 1
                self.stats.unstored_lost += 1
                log.error(
                    "MQTT: broker refused a final that has no durable copy (the spool cannot store): %s; "
                    "it is lost (check the broker's ACL for this user)",
                    reason_code,
                )
            return None
        if not refused:
            refusals = self._held.accepted(seq)
            if refusals is not None:
                log.warning(
                    "MQTT: broker accepted final seq %d after %d refusal(s); sending the finals held behind it",
                    seq,
                    refusals,
                )
            return seq
        self.stats.rejected += 1
        # Keep seq order: nothing after the oldest refused final is handed out until the broker takes it.
        self._handed_up_to = min(self._handed_up_to, seq - 1)
        delay = self._held.refused(seq)
        if delay is not None:
            message = (
                f"MQTT: broker refused final seq {seq} on {self.topics.base}/...: {reason_code} (check the "
                "broker's ACL for this user); it stays in the spool and is retried with backoff up to "
                f"{self.config.reconnect_max_s:.0f} s, later finals wait behind it"
            )
            if self._held.refusals == 1:
                log.error("%s", message)
                self.stats.last_error = message
            else:
                log.debug("%s (refusal %d, next try in %.1f s)", message, self._held.refusals, delay)
        return None

    def _ack_spooled(self, seqs: list[int]) -> None:
        if self.cursor is not None:
            self.cursor.ack(seqs)

    def _send(self, payload: bytes) -> mqtt.MQTTMessageInfo:
        """A spooled final to its stream's transcript topic (the stream is read from the payload)."""
        topic = self.topics.transcript(json.loads(payload)["stream"])
        return self.client.publish(topic, payload, qos=self.config.qos)

    def _fill_window(self) -> None:
        if self.cursor is None:
            return
        spooled_inflight = {s for s in self._inflight.values() if s != UNSTORED}
        if self._held.seq is not None:
            # Only the held final goes out, alone, when its backoff has passed.
            if self._held.seq in spooled_inflight or not self._held.due():
                return
            m = self.cursor.get(self._held.seq)
            if m is None:  # dropped by the spool bound meanwhile: nothing to wait for
                self._held.forget()
                return
            info = self._send(m.payload)
            if info.rc != MQTTErrorCode.MQTT_ERR_QUEUE_SIZE:
                self._inflight[info.mid] = m.seq
            return
        room = self.config.inflight_window - len(spooled_inflight)
        if room <= 0 or self.cursor.count == 0:
            return
        for m in self.cursor.after(self._handed_up_to, room + len(spooled_inflight)):
            if m.seq in spooled_inflight:
                self._handed_up_to = m.seq  # handed before a refusal rewound us; its PUBACK is on the way
                continue
            if room <= 0:
                break
            # QoS 0 finals (mqtt.qos = 0) get no PUBACK: they leave the spool once handed over.
            info = self._send(m.payload)
            if info.rc == MQTTErrorCode.MQTT_ERR_QUEUE_SIZE:
                break
            self._handed_up_to = m.seq
            room -= 1
            if self.config.qos == 0:
                self._ack_spooled([m.seq])
            else:
                self._inflight[info.mid] = m.seq

    # ---- shutdown ------------------------------------------------------------------------------

    def stop(self, deadline: float) -> None:
        """Spool what is queued, give in-flight finals a moment to be acknowledged, say offline: CLOSE_SPOOL_S and
        CLOSE_ACK_WAIT_S, past `deadline` if need be (cutting them short would lose accepted finals)."""
        self._mailbox.put("stop")
        self._thread.join(max(CLOSE_SPOOL_S, deadline - time.monotonic()))
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

    def _drain_acks_after_stop(self) -> None:
        # The publisher thread is gone; its state is ours now.
        acked = []
        for kind, item in self._mailbox.take_all(timeout=0):
            if kind == "ack":
                seq = self._ack(*item)
                if seq is not None:
                    acked.append(seq)
        self._ack_spooled(acked)
        self.stats.published += len(acked)
