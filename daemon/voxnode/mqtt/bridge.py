"""Ties the MQTT publisher to the daemon: transcripts, health reports, commands, mute, Home
Assistant discovery.

`MqttBridge` is the "mqtt" Output (voxnode.outputs): it owns the publisher thread, paho's network
thread and the memory-snapshot thread; it is durable (the publisher reads the finals it has not
delivered through its spool cursor: the daemon's sequencer stored them, with their seq, before
`handle` sees them; partials go to a small lossy queue; never blocks); its health section is
`mqtt`; and its hook is itself: the daemon calls `tick` from its main thread every 0.1 s, and
everything that touches the daemon (mute, reload) or decides what to announce happens there.
paho's thread only queues what arrives.
Health reports come from the daemon's HealthReporter, which hands each one to `publish_health`.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from voxnode.config import Config
from voxnode.config.wake import wake_streams
from voxnode.control import DaemonControl
from voxnode.delivery.schema import default_spool_path
from voxnode.events import Event, TranscriptEvent, WakeEvent, dumps
from voxnode.health.nodeinfo import board_model
from voxnode.health.reporter import HealthReporter
from voxnode.lifecycle import Component, Hook, start_all, stop_all
from voxnode.mqtt.announcer import Announcer
from voxnode.mqtt.client import MqttPublisher
from voxnode.mqtt.command_runner import CommandRunner
from voxnode.mqtt.discovery import StreamDevice
from voxnode.mqtt.discovery_parts import MUTE_OFF, MUTE_ON
from voxnode.mqtt.mute_record import MuteRecord, mute_record_path
from voxnode.mqtt.status import ONLINE, status_payload
from voxnode.mqtt.topics import Topics
from voxnode.outputs.base import Output, OutputContext

if TYPE_CHECKING:
    from voxnode.delivery.cursor import SpoolCursor
    from voxnode.host_view import HostView
    from voxnode.reload import ReloadResult

log = logging.getLogger("voxnode.mqtt")

# After a connect, discovery waits for the echo of the sync marker (Topics.sync), i.e. for what the
# broker retains on the discovery topics, so the first announcement already has its tombstones.
# A broker whose ACL hides the marker gets the announcement after this long instead.
SYNC_WAIT_S = 3.0


def stream_devices(config: Config) -> list[StreamDevice]:
    wake = wake_streams(config)
    return [StreamDevice(s.name, s.area, wake=s.name in wake) for s in config.effective_streams()]


class MqttBridge(Output, Hook):
    """The MQTT output; also its own main-thread hook (commands, Home Assistant, status)."""

    name = "mqtt"
    durable = True

    def __init__(self, config: Config, reporter: HealthReporter, *, board_root: str = "/"):
        self.config = config
        self.reporter = reporter
        self.topics = Topics.from_config(config.mqtt)
        self.streams = [s.name for s in config.effective_streams()]
        self.cursor: SpoolCursor | None = None  # attach(): the finals MQTT has not delivered
        self.announcer = Announcer(
            self.topics,
            enabled=config.mqtt.discovery,
            board=board_model(board_root),
            backlog_limit=config.mqtt.inflight_window,
        )
        self.announcer.set_streams(stream_devices(config))
        self._retained_lock = threading.Lock()
        self._retained: dict[str, bytes] = {}  # discovery topic -> retained payload, from paho's thread
        self._stale_mute: set[str] = set()  # retained mute states of streams not configured, same
        self._connected = threading.Event()
        self._synced = threading.Event()  # the sync marker came back after the last connect
        # Main thread: no announcement before this (unless synced); none at all before the first connect
        # has been handled here: paho flags the link up a moment before the connect hook runs.
        self._hold_until: float | None = math.inf
        self._ha_online = threading.Event()
        t = self.topics
        self.publisher = MqttPublisher(
            config.mqtt,
            t,
            model_name=self._model_name,
            # The discovery topics too, discovery on or off: what the broker retains there is what
            # Home Assistant knows of this node (the Announcer cleans it up).
            # Retained mute states too: one left by a stream that is no longer configured is cleared.
            subscriptions=(
                t.cmd,
                t.mute_set_filter,
                t.follow_up_set_filter,
                t.playing_set_filter,
                t.ha_status,
                t.discovery,
                t.stream_discovery_filter,
                t.mute_state_filter,
                t.sync,
            ),
            sync_topic=t.sync,
            on_message=self._on_message,
            on_connected=self._on_connected,
            status=self._status,
        )
        # Commands, and the streams the user muted, recorded next to the spool (survives a restart).
        record = MuteRecord(mute_record_path(config.delivery.spool_path or default_spool_path()))
        self.commands = CommandRunner(
            t, config.mqtt.max_command_bytes, self.publisher, reporter, record, self._publish_mute_state
        )
        reporter.subscribe(self.publish_health)
        self._children: list[Component] = [self.publisher, self.commands]  # the commands publish replies

    # ---- Output --------------------------------------------------------------------------------

    @classmethod
    def from_context(cls, ctx: OutputContext) -> MqttBridge | None:
        return cls(ctx.config, ctx.reporter) if ctx.config.mqtt.enabled else None

    def attach(self, cursor: SpoolCursor) -> None:
        self.cursor = cursor
        self.publisher.cursor = cursor

    def hook(self) -> Hook:
        return self

    def start(self) -> None:
        start_all(self._children)

    def stop(self, deadline: float) -> None:
        """After the last final was emitted: the commands' thread, then the publisher (spool what is
        queued, let in-flight finals be acknowledged, say offline: it keeps its own bounds past
        `deadline`, MqttPublisher.stop)."""
        stop_all(self._children, deadline)

    def on_starting(self, host: HostView) -> None:
        """Before any stream captures: streams muted before the restart stay muted."""
        self.commands.restore_mutes(host.control)

    def handle(self, event: Event) -> None:
        """Finals come here already stored in the spool, with their seq (the daemon's sequencer records
        them first): this only wakes the publisher, which reads them through its cursor. A final the
        spool could not store (`"seq": null`), or one that came another way (no cursor, no seq: a test
        or script handing finals over directly), is sent from memory."""
        if isinstance(event, TranscriptEvent):
            if not event.is_final:
                self.publisher.submit_partial(event.as_dict())
            elif self.cursor is None or event.seq is None:
                self.publisher.submit_unstored(event.as_dict())
            else:
                self.publisher.submit_stored()
        elif isinstance(event, WakeEvent):
            # Worth something only now: not spooled, dropped while the broker is away.
            self.publisher.publish_now(self.topics.wake(event.stream), dumps(event.as_dict()), qos=1)
        # level reports stay local (stdout/log)

    def health(self) -> Callable[[], dict]:
        return self.mqtt_stats

    # ---- Hook ----------------------------------------------------------------------------------

    def tick(self, host: HostView, now: float) -> None:
        # Runs on the daemon's main thread: an exception here would stop the daemon, so none gets out.
        try:
            self.commands.run(host.control)
        except Exception:  # noqa: BLE001
            log.exception("MQTT: a command failed")
        try:
            self._follow_broker(host.control, now)
            self._announce(now)
        except Exception:  # noqa: BLE001
            log.exception("MQTT: announcing to Home Assistant failed")

    def on_ready(self, host: HostView) -> None:
        self.publish_status()  # the model has loaded since the connect: its name is known now

    def on_reloaded(self, host: HostView, result: ReloadResult) -> None:
        # Streams can come and go on a reload, and their areas change: Home Assistant follows
        # (removed streams' devices are sent as tombstones). [mqtt] and [health] themselves apply
        # after a restart (the reload summary says so).
        if not result.ok:
            return
        control = host.control
        names = list(control.stream_names())
        for gone in sorted(set(self.streams) - set(names)):
            self.publisher.publish_now(self.topics.mute_state(gone), b"", qos=1, retain=True)  # clears it
            self.publisher.publish_now(self.topics.playing_state(gone), b"", qos=1, retain=True)
        for gone in sorted(set(self.streams) - {n for n in names if control.follow_up(n) is not None}):
            self.publisher.publish_now(self.topics.follow_up_state(gone), b"", qos=1, retain=True)
        self.streams = names
        self.announcer.set_streams(stream_devices(host.config()))
        self.commands.follow_record(control)  # a stream added back that the user had muted
        self._publish_mute_states(control)
        self.reporter.request()
        self.publish_status()  # the config checksum (and maybe the streams) changed

    # ---- status ----------------------------------------------------------------------------------

    def _status(self, state: str) -> bytes:
        """The status payload (any thread: paho's on connect, the main thread on ready and reload)."""
        return status_payload(
            state,
            self.topics.node,
            self.reporter.started_wall,
            self.reporter.node_info(),
            self._model_name() or None,
            self.streams,
        )

    def publish_status(self) -> None:
        self.publisher.publish_now(self.topics.status, self._status(ONLINE), qos=1, retain=True)

    # ---- Home Assistant ------------------------------------------------------------------------

    def _on_connected(self) -> None:  # paho's thread, before anything of this connection arrives
        self._synced.clear()
        self._connected.set()
        self.reporter.request()

    def _follow_broker(self, control: DaemonControl, now: float) -> None:
        """A (re)connect, Home Assistant's birth message, retained discovery messages: main thread."""
        if self._connected.is_set():
            self._connected.clear()
            self.announcer.force()
            self._hold_until = now + SYNC_WAIT_S
            self._publish_mute_states(control)
        if self._synced.is_set():  # read before the retained messages: they came before the marker
            self._hold_until = None
        if self._ha_online.is_set():
            self._ha_online.clear()
            log.info("MQTT: Home Assistant came online; announcing the node again")
            self.announcer.force()
            self.reporter.request()
        with self._retained_lock:
            retained, self._retained = self._retained, {}
            mute_states, self._stale_mute = self._stale_mute, set()
        for topic, payload in retained.items():
            self.announcer.saw_retained(topic, payload)
        for topic in sorted(mute_states):
            if self.topics.stream_of_mute_state(topic) not in self.streams:
                self.publisher.publish_now(topic, b"", qos=1, retain=True)  # a stream removed while we were away

    def _announce(self, now: float) -> None:
        if self._hold_until is not None:
            if now < self._hold_until:  # math.inf: not connected yet
                return
            log.warning(
                "MQTT: no echo of %s within %.0f s (does the ACL let this user read it?); announcing "
                "to Home Assistant without waiting for the retained configs",
                self.topics.sync,
                SYNC_WAIT_S,
            )
            self._hold_until = None
        for topic, payload in self.announcer.pending():
            if not payload:
                log.info("MQTT: discovery is off; removing the retained Home Assistant config on %s", topic)
            self.publisher.publish_now(topic, payload, qos=1, retain=True)

    def _publish_mute_states(self, control: DaemonControl) -> None:
        """And the follow-up switches' (streams with a wake word)."""
        for name in self.streams:
            self._publish_mute_state(name, control.is_muted(name))
            playing = MUTE_ON if control.playing(name) else MUTE_OFF
            self.publisher.publish_now(self.topics.playing_state(name), playing, qos=1, retain=True)
            follow_up = control.follow_up(name)
            if follow_up is not None:
                state = MUTE_ON if follow_up else MUTE_OFF
                self.publisher.publish_now(self.topics.follow_up_state(name), state, qos=1, retain=True)

    def _publish_mute_state(self, stream: str, muted: bool) -> None:
        state = MUTE_ON if muted else MUTE_OFF
        self.publisher.publish_now(self.topics.mute_state(stream), state, qos=1, retain=True)

    # ---- health --------------------------------------------------------------------------------

    def publish_health(self, report: dict) -> None:
        """A report from the daemon's HealthReporter (main thread). The entities that read it are
        announced first, so they exist when it comes (and those it enables, e.g. the temperature
        on a board with a thermal zone, are added with it)."""
        self.announcer.add_capabilities(report)
        try:
            self._announce(time.monotonic())
        except Exception:  # noqa: BLE001 - the report still goes out
            log.exception("MQTT: announcing to Home Assistant failed")
        self.publisher.publish_now(self.topics.health, dumps(report), qos=0, retain=True)

    def mqtt_stats(self) -> dict:
        st = self.publisher.stats
        cursor = self.cursor
        spool = cursor.spool if cursor is not None else None
        return {
            "connected": st.connected,
            "backlog": self.publisher.backlog,
            "inflight": st.inflight,
            # The spool as MQTT sees it: the finals waiting for the broker, and the shared file's state.
            "spool_messages": cursor.count if cursor is not None else 0,
            "spool_bytes": spool.size_bytes() if spool is not None else 0,
            "spool_dropped_total": spool.dropped_total if spool is not None else 0,
            "spool_writable": spool.writable if spool is not None else False,
            "spool_error": spool.error if spool is not None else "",
            "unstored": spool.unstored if spool is not None else 0,
            "published": st.published,
            "rejected": st.rejected,
            "held_seq": st.held_seq,
            "retry_in_s": st.retry_in_s,
            "partials_dropped": st.partials_dropped,
            # Finals the publisher could not hold in memory, and those the daemon's sequencer could
            # not queue for the spool (the journal hears of those).
            "finals_refused": st.finals_refused + (spool.refused if spool is not None else 0),
            "unstored_lost": st.unstored_lost,
            "bad_events": st.bad_events,
            "connects": st.connects,
            "disconnects": st.disconnects,
            "last_error": st.last_error,
        }

    def _model_name(self) -> str:  # the publisher thread, for each transcript
        return self.reporter.model_name()

    # ---- what arrives (paho's thread: queue it, nothing more) ----------------------------------

    def _on_message(self, topic: str, payload: bytes, retained: bool) -> None:
        t = self.topics
        if topic == t.cmd or any(
            f(topic) is not None for f in (t.stream_of_mute_set, t.stream_of_follow_up_set, t.stream_of_playing_set)
        ):
            self.commands.arrived(topic, payload, retained)  # a retained one is ignored (and said to be)
        elif topic == t.sync:
            self._synced.set()
        elif topic == t.ha_status:
            if payload.strip().lower() == b"online":
                self._ha_online.set()
        elif retained and self.announcer.is_discovery_topic(topic):
            # Only retained copies say what the broker holds; live ones are our own announcements.
            with self._retained_lock:
                self._retained[topic] = payload
        elif retained and payload and t.stream_of_mute_state(topic) is not None:
            with self._retained_lock:
                self._stale_mute.add(topic)
