"""Ties the MQTT publisher to the daemon: health reports, commands, discovery.

`MqttService` is a DaemonHooks: the daemon calls `tick` from its main thread
every 0.1 s, and everything that touches the daemon (snapshot, mute, reload)
happens there. paho's thread only queues commands for it.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import Callable

from voxnode.config import Config
from voxnode.control import DaemonControl
from voxnode.events import iso8601
from voxnode.health.memory import TraceSnapshots
from voxnode.health.report import HealthMonitor
from voxnode.mqtt.client import MqttPublisher
from voxnode.mqtt.commands import CommandError, check_size, error_reply, parse_command
from voxnode.mqtt.discovery import discovery_payload
from voxnode.mqtt.journal import FinalsJournal, dumps
from voxnode.mqtt.sink import MqttSink
from voxnode.mqtt.spool import Spool, default_spool_path
from voxnode.mqtt.topics import Topics

log = logging.getLogger("voxnode.mqtt")

COMMAND_QUEUE = 32  # commands are rare; a flood beyond this is refused with an error reply


class MqttService:
    def __init__(
        self,
        config: Config,
        *,
        engine_info: Callable[[object], dict | None] = lambda daemon: None,
        thermal_root: str = "/",
        health: HealthMonitor | None = None,
    ):
        self.config = config
        self.topics = Topics.from_config(config.mqtt)
        self.streams = [s.name for s in config.effective_streams()]
        self._engine_info = engine_info
        self._last_engine: dict | None = None
        self.health = health or HealthMonitor(config.health, self.topics.node, thermal_root=thermal_root)
        spool_path = config.mqtt.spool_path or default_spool_path()
        self.spool = Spool(spool_path, config.mqtt.spool_max_messages)
        self._commands: queue.Queue[bytes] = queue.Queue(COMMAND_QUEUE)
        self._health_now = threading.Event()
        self._next_health = 0.0
        self._traces = TraceSnapshots()
        self._memory_busy = threading.Lock()
        self.last_health: dict | None = None
        self._last_health_error = ""
        self.publisher = MqttPublisher(
            config.mqtt,
            self.topics,
            self.spool,
            model_name=self._model_name,
            on_command=self._queue_command,
            on_connected=self._health_now.set,
            announcements=self._announcements,
        )
        # Gives finals their seq (the daemon's sequencer calls it before any sink sees a final).
        self.journal = FinalsJournal(self.spool, self.topics, self._model_name)
        self.sink = MqttSink(self.publisher, self.journal)

    def start(self) -> None:
        self.publisher.start()

    # ---- DaemonHooks ---------------------------------------------------------------------------

    def on_ready(self, daemon) -> None:
        self._health_now.set()

    def tick(self, daemon, now: float) -> None:
        # Runs on the daemon's main thread: an exception here would stop the daemon, so none gets out.
        try:
            self._run_commands(daemon)
        except Exception:  # noqa: BLE001
            log.exception("MQTT: a command failed")
        if self._health_now.is_set() or now >= self._next_health:
            self._health_now.clear()
            self._next_health = now + self.config.health.interval_s
            try:
                self.publish_health(daemon, now)
            except Exception as e:  # noqa: BLE001
                if type(e).__name__ != self._last_health_error:
                    log.exception("health report failed (further failures of this kind are logged at debug)")
                self._last_health_error = type(e).__name__

    def on_stopping(self, daemon) -> None:
        pass  # the sink's close() (after the pipeline drains) says offline and flushes the spool

    def on_reloaded(self, daemon, result) -> None:
        # Streams can come and go on a reload: Home Assistant must see the new entity list.
        # [mqtt] and [health] themselves apply after a restart (the reload summary says so).
        names = list(daemon.stream_names())
        if getattr(result, "ok", False) and names != self.streams:
            self.streams = names
            for topic, payload in self._announcements():
                self.publisher.publish_now(topic, payload, qos=1, retain=True)
            self._health_now.set()

    # ---- health --------------------------------------------------------------------------------

    def collect_health(self, daemon, now: float) -> dict:
        self.health.housekeeping(now)
        try:
            engine = self._engine_info(daemon)
        except Exception as e:  # noqa: BLE001 - a broken provider must not stop health reports
            log.debug("engine info provider failed: %s", e)
            engine = None
        self._last_engine = engine
        snapshot = daemon.snapshot()
        for name, st in (snapshot.get("streams") or {}).items():
            st.setdefault("muted", bool(getattr(daemon, "is_muted", lambda n: False)(name)))
            for key, value in self.sink.latency.report(name).items():
                st.setdefault(key, value)  # the pipeline's own figures win when it reports them
        report = self.health.collect(snapshot, engine, self.mqtt_stats(snapshot.get("sequencer")))
        self.last_health = report
        return report

    def publish_health(self, daemon, now: float) -> dict:
        report = self.collect_health(daemon, now)
        self.publisher.publish_now(self.topics.health, dumps(report), qos=0, retain=True)
        return report

    def mqtt_stats(self, sequencer: dict | None = None) -> dict:
        """The mqtt block of health; `sequencer` is the daemon snapshot's (finals it could not queue)."""
        st = self.publisher.stats
        return {
            "connected": st.connected,
            "backlog": self.publisher.backlog,
            "inflight": st.inflight,
            "spool_messages": self.spool.count,
            "spool_bytes": self.spool.size_bytes(),
            "spool_dropped_total": self.spool.dropped_total,
            "spool_writable": self.spool.writable,
            "spool_error": self.spool.error,
            "unstored": self.spool.unstored,
            "published": st.published,
            "rejected": st.rejected,
            "held_seq": st.held_seq,
            "retry_in_s": st.retry_in_s,
            "partials_dropped": st.partials_dropped,
            "finals_refused": st.finals_refused + int((sequencer or {}).get("refused", 0)),
            "unstored_lost": st.unstored_lost,
            "bad_events": st.bad_events,
            "connects": st.connects,
            "disconnects": st.disconnects,
            "last_error": st.last_error,
        }

    def _model_name(self) -> str:
        e = self._last_engine or {}
        return str(e.get("model") or e.get("name") or "whisper-tiny.en")

    def _announcements(self) -> list[tuple[str, bytes]]:
        if not self.config.mqtt.discovery:
            return []
        return [(self.topics.discovery, dumps(discovery_payload(self.topics, self.streams)))]

    # ---- commands ------------------------------------------------------------------------------

    def _queue_command(self, payload: bytes) -> None:  # paho's thread
        try:
            # Before queueing: 40 oversized commands once held 32 x 16 MB in the queue (RSS 159 -> 295 MB).
            check_size(payload, self.config.mqtt.max_command_bytes)
        except CommandError as e:
            log.warning("MQTT command refused: %s", e.message)
            self._reply_error(e, payload)
            return
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
                daemon.set_muted(cmd.stream, cmd.name == "mute")
                self._health_now.set()  # the HA switch reads its state from health
            elif cmd.name == "reload":
                daemon.request_reload()
            elif cmd.name == "health":
                self._health_now.set()
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

        threading.Thread(target=work, name="memory-snapshot", daemon=True).start()

    def _reply_error(self, err: CommandError, payload: bytes) -> None:
        self.publisher.publish_now(self.topics.error, dumps(error_reply(err, payload, iso8601(time.time()))), qos=1)


def engine_info_from(daemon) -> dict | None:
    """Find the speech engine's info on the daemon without importing the engine (the lead may wire a better one)."""
    for path in (("recognizer",), ("engine",), ("speech", "engine"), ("speech", "recognizer")):
        obj = daemon
        for name in path:
            obj = getattr(obj, name, None)
            if obj is None:
                break
        info = getattr(obj, "info", None) if obj is not None else None
        if info is not None and hasattr(info, "as_dict"):
            return info.as_dict()
    return None


def build_mqtt(config: Config) -> MqttService | None:
    """The CLI's entry point: None when [mqtt] is off. Raises VoxnodeError subclasses on bad settings."""
    if not config.mqtt.enabled:
        return None
    service = MqttService(config, engine_info=engine_info_from)
    service.start()
    return service
