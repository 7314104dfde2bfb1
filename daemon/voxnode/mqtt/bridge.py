"""Ties the MQTT publisher to the daemon: transcripts, health reports, commands, discovery.

`MqttBridge` is a Component (it owns the publisher thread, paho's network thread and the
memory-snapshot thread), a sink (finals to the durable spool, partials to a small lossy queue;
never blocks) and a Hook: the daemon calls `tick` from its main thread every 0.1 s, and everything
that touches the daemon (mute, reload) happens there. paho's thread only queues commands for it.
Health reports come from the daemon's HealthReporter, which hands each one to `publish_health`.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import TYPE_CHECKING

from voxnode.config import Config
from voxnode.control import DaemonControl
from voxnode.events import iso8601
from voxnode.health.memory import TraceSnapshots
from voxnode.health.reporter import HealthReporter
from voxnode.lifecycle import Component, Hook
from voxnode.mqtt.client import MqttPublisher, dumps
from voxnode.mqtt.commands import CommandError, error_reply, parse_command
from voxnode.mqtt.discovery import discovery_payload
from voxnode.mqtt.spool import Spool, default_spool_path
from voxnode.mqtt.status import ONLINE, status_payload
from voxnode.mqtt.topics import Topics

if TYPE_CHECKING:
    from voxnode.daemon import Daemon
    from voxnode.reload import ReloadResult

log = logging.getLogger("voxnode.mqtt")

COMMAND_QUEUE = 32  # commands are rare; a flood beyond this is refused with an error reply


class MqttBridge(Component, Hook):
    def __init__(self, config: Config, reporter: HealthReporter):
        self.config = config
        self.reporter = reporter
        self.topics = Topics.from_config(config.mqtt)
        self.streams = [s.name for s in config.effective_streams()]
        spool_path = config.mqtt.spool_path or default_spool_path()
        self.spool = Spool(spool_path, config.mqtt.spool_max_messages)
        self._commands: queue.Queue[bytes] = queue.Queue(COMMAND_QUEUE)
        self._traces = TraceSnapshots()
        self._memory_busy = threading.Lock()
        self._memory_thread: threading.Thread | None = None
        self.publisher = MqttPublisher(
            config.mqtt,
            self.topics,
            self.spool,
            model_name=self._model_name,
            on_command=self._queue_command,
            on_connected=reporter.request,
            announcements=self._announcements,
            status=self._status,
        )
        reporter.add_section("mqtt", self.mqtt_stats)
        reporter.subscribe(self.publish_health)

    # ---- Component -----------------------------------------------------------------------------

    def start(self) -> None:
        self.publisher.start()

    def stop(self, deadline: float) -> None:
        """After the last final was emitted: spool what is queued, let in-flight finals be
        acknowledged, say offline. The publisher keeps its own bounds (up to 10 s to spool, 3 s
        for acknowledgements) past `deadline`: cutting them short would lose accepted finals."""
        memory = self._memory_thread
        if memory is not None:
            memory.join(max(0.0, deadline - time.monotonic()))
        self.publisher.close()

    # ---- sink ----------------------------------------------------------------------------------

    def emit(self, event: dict) -> None:
        kind = event.get("type")
        if kind == "final":
            self.publisher.submit_final(event)
        elif kind == "partial":
            self.publisher.submit_partial(event)
        # level reports and other diagnostics stay local (stdout/log)

    # ---- Hook ----------------------------------------------------------------------------------

    def tick(self, daemon: DaemonControl, now: float) -> None:
        # Runs on the daemon's main thread: an exception here would stop the daemon, so none gets out.
        try:
            self._run_commands(daemon)
        except Exception:  # noqa: BLE001
            log.exception("MQTT: a command failed")

    def on_ready(self, daemon: Daemon) -> None:
        self.publish_status()  # the model has loaded since the connect: its name is known now

    def on_reloaded(self, daemon: DaemonControl, result: ReloadResult) -> None:
        # Streams can come and go on a reload: Home Assistant must see the new entity list.
        # [mqtt] and [health] themselves apply after a restart (the reload summary says so).
        names = list(daemon.stream_names())
        if result.ok and names != self.streams:
            self.streams = names
            for topic, payload in self._announcements():
                self.publisher.publish_now(topic, payload, qos=1, retain=True)
            self.reporter.request()
        if result.ok:
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

    # ---- health --------------------------------------------------------------------------------

    def publish_health(self, report: dict) -> None:
        self.publisher.publish_now(self.topics.health, dumps(report), qos=0, retain=True)

    def mqtt_stats(self) -> dict:
        st = self.publisher.stats
        return {
            "connected": st.connected,
            "backlog": self.publisher.backlog,
            "inflight": st.inflight,
            "spool_messages": self.spool.count,
            "spool_bytes": self.spool.size_bytes(),
            "spool_dropped_total": self.spool.dropped_total,
            "published": st.published,
            "rejected": st.rejected,
            "partials_dropped": st.partials_dropped,
            "finals_refused": st.finals_refused,
            "bad_events": st.bad_events,
            "connects": st.connects,
            "disconnects": st.disconnects,
            "last_error": st.last_error,
        }

    def _model_name(self) -> str:  # the publisher thread, for each transcript
        info = self.reporter.engine_info()
        return info.model if info is not None else ""

    def _announcements(self) -> list[tuple[str, bytes]]:
        if not self.config.mqtt.discovery:
            return []
        return [(self.topics.discovery, dumps(discovery_payload(self.topics, self.streams)))]

    # ---- commands ------------------------------------------------------------------------------

    def _queue_command(self, payload: bytes) -> None:  # paho's thread
        try:
            self._commands.put_nowait(payload)
        except queue.Full:
            self._reply_error(CommandError("busy", f"more than {COMMAND_QUEUE} commands waiting; try again"), payload)

    def _run_commands(self, daemon: DaemonControl) -> None:
        while True:
            try:
                payload = self._commands.get_nowait()
            except queue.Empty:
                return
            try:
                cmd = parse_command(
                    payload, max_bytes=self.config.mqtt.max_command_bytes, streams=list(daemon.stream_names())
                )
            except CommandError as e:
                log.warning("MQTT command refused: %s", e.message)
                self._reply_error(e, payload)
                continue
            log.info("MQTT command: %s%s", cmd.name, f" {cmd.stream}" if cmd.stream else "")
            if cmd.name in ("mute", "unmute"):
                assert cmd.stream is not None  # parse_command requires it for these
                daemon.set_muted(cmd.stream, cmd.name == "mute")
                self.reporter.request()  # the HA switch reads its state from health
            elif cmd.name == "reload":
                daemon.request_reload()
            elif cmd.name == "health":
                self.reporter.request()
            elif cmd.name == "memory":
                self._memory_snapshot(cmd.id)

    def _memory_snapshot(self, cid: str | None) -> None:
        # tracemalloc snapshots take long enough to delay the main thread's tick (and the watchdog).
        if not self._memory_busy.acquire(blocking=False):
            self._reply_error(CommandError("busy", "a memory snapshot is already being taken", "memory", cid), b"")
            return

        def work() -> None:
            try:
                result = {"id": cid, "time": iso8601(time.time()), **self._traces.take()}
                self.publisher.publish_now(self.topics.debug_memory, dumps(result), qos=1)
            except Exception:  # noqa: BLE001
                log.exception("memory snapshot failed")
            finally:
                self._memory_busy.release()

        self._memory_thread = threading.Thread(target=work, name="memory-snapshot", daemon=True)
        self._memory_thread.start()

    def _reply_error(self, err: CommandError, payload: bytes) -> None:
        self.publisher.publish_now(self.topics.error, dumps(error_reply(err, payload, iso8601(time.time()))), qos=1)
