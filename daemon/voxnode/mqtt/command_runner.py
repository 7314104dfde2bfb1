"""Remote commands from arrival to effect: queued by paho's thread, carried out on the daemon's main
thread, the mute kept in the node's own record (mqtt/mute_record.py).

A command acts once, when it arrives. One published with the retain flag reaches the node live
with the flag cleared (MQTT 3.1.1 section 3.3.1.3, MQTT 5 without Retain As Published) and is carried
out then; the broker keeps a copy and hands it to the node, flagged retained, at every later connect.
Before, that copy was carried out too: a retained `mute` muted the node at every restart, and a
retained `unmute` would have unmuted it. Retained copies are now ignored, with one log line and one
`error` reply (code `retained`) per message and run, not one per reconnect. They are left on the
broker: the node does not delete what other clients publish (an empty retained message clears it;
an empty payload on a command topic is therefore taken as that, and ignored).

A `Component` for its one thread: the `memory` command's tracemalloc snapshots (long enough to delay
the main thread's tick and the watchdog) are taken there, one at a time.
"""

from __future__ import annotations

import hashlib
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from voxnode.command_table import Command, CommandTable
from voxnode.control import DaemonControl
from voxnode.events import dumps, iso8601
from voxnode.health.memory import TraceSnapshots
from voxnode.lifecycle import Component
from voxnode.mqtt.commands import (
    FOLLOW_UP_PAYLOADS,
    PLAYING_PAYLOADS,
    CommandError,
    check_size,
    error_reply,
    parse_command,
    parse_mute_set,
    parse_switch_set,
    sendable,
)
from voxnode.mqtt.mute_record import MuteRecord, UnreadableRecord
from voxnode.mqtt.topics import Topics
from voxnode.threads import NamedThread

if TYPE_CHECKING:
    from voxnode.health.reporter import HealthReporter
    from voxnode.mqtt.client import MqttPublisher

log = logging.getLogger("voxnode.mqtt")

COMMAND_QUEUE = 32  # commands are rare; a flood beyond this is refused with an error reply
# Retained messages already answered this run: one per command topic (cmd, each {stream}/mute/set);
# a client retaining on thousands of made-up stream topics gets its first 256 answered, then silence.
MAX_ANSWERED_RETAINED = 256


class CommandRunner(Component):
    def __init__(
        self,
        topics: Topics,
        max_command_bytes: int,
        publisher: MqttPublisher,
        reporter: HealthReporter,
        record: MuteRecord,
        publish_mute_state: Callable[[str, bool], None],
    ):
        self.topics = topics
        self.max_bytes = max_command_bytes
        self.publisher = publisher
        self.reporter = reporter
        self.record = record
        self._publish_mute_state = publish_mute_state
        self._queue: queue.Queue[tuple[str, bytes]] = queue.Queue(COMMAND_QUEUE)  # (topic, payload)
        self._answered: set[tuple[str, bytes]] = set()  # (topic, sha256 of the payload), paho's thread
        self._traces = TraceSnapshots()
        self._memory_busy = threading.Lock()  # held from a memory command's arrival to its reply
        self._memory_jobs: queue.SimpleQueue[tuple[str | None] | None] = queue.SimpleQueue()  # (id,); None: stop
        self._memory_thread = NamedThread(target=self._memory_worker, name="memory-snapshot", daemon=True)
        self.table = CommandTable(
            {
                "mute": lambda daemon, cmd: self._set_muted(daemon, _stream(cmd), True),
                "unmute": lambda daemon, cmd: self._set_muted(daemon, _stream(cmd), False),
                "follow_up_on": self._set_follow_up,
                "follow_up_off": self._set_follow_up,
                "playing_on": self._set_playing,
                "playing_off": self._set_playing,
                "reload": lambda daemon, cmd: daemon.request_reload(),
                "health": lambda daemon, cmd: self.reporter.request(),
                "memory": lambda daemon, cmd: self._memory_snapshot(cmd.id),
            }
        )

    @property
    def waiting(self) -> int:
        return self._queue.qsize()

    def start(self) -> None:
        self._memory_thread.start()

    def stop(self, deadline: float) -> None:
        """A memory snapshot being taken is published by `deadline` if it can."""
        self._memory_jobs.put(None)
        self._memory_thread.join(max(0.0, deadline - time.monotonic()))

    # ---- the mute record (main thread) ---------------------------------------------------------

    def restore_mutes(self, daemon: DaemonControl) -> None:
        """Before the streams capture: the streams the user left muted are muted again."""
        try:
            recorded = self.record.load()
        except UnreadableRecord as e:
            recorded = self.record.muted = set(daemon.stream_names())
            log.error(
                "MQTT: cannot read the mute record (%s); every stream starts muted until unmuted: %s",
                e,
                ", ".join(sorted(recorded)),
            )
        self.follow_record(daemon, "muted before the restart")

    def follow_record(self, daemon: DaemonControl, why: str = "recorded as muted") -> None:
        """Mute the configured streams the record lists (at start; after a reload that added one)."""
        for name in daemon.stream_names():
            if name in self.record.muted and not daemon.is_muted(name):
                daemon.set_muted(name, True)
                log.info("stream %s stays muted (%s; %s)", name, why, self.record.path)

    # ---- arrival (paho's thread: queue it, nothing more) ---------------------------------------

    def arrived(self, topic: str, payload: bytes, retained: bool) -> None:
        if not payload:
            log.info("MQTT: empty message on %s (a retained command being cleared); ignored", topic)
            return
        if retained:
            self._ignore_retained(topic, payload)
            return
        try:
            # Before queueing: 40 oversized commands once held 32 x 16 MB in the queue (RSS 159 -> 295 MB).
            check_size(payload, self.max_bytes)
        except CommandError as e:
            log.warning("MQTT command refused: %s", e.message)
            self._reply_error(e, payload)
            return
        try:
            self._queue.put_nowait((topic, payload))
        except queue.Full:
            self._reply_error(CommandError("busy", f"more than {COMMAND_QUEUE} commands waiting; try again"), payload)

    def _ignore_retained(self, topic: str, payload: bytes) -> None:
        key = (topic, hashlib.sha256(payload).digest())
        if key in self._answered or len(self._answered) >= MAX_ANSWERED_RETAINED:
            log.debug("MQTT: retained command on %s ignored again", topic)
            return
        self._answered.add(key)
        excerpt = payload[:80].decode("utf-8", errors="replace")
        log.warning(
            "MQTT: ignored a retained command on %s (%r): a command acts once, when it arrives, and the "
            "broker would replay a retained one at every connect; clear it with an empty retained "
            "message (mosquitto_pub -r -n -t '%s')",
            topic,
            excerpt,
            topic,
        )
        message = (
            f"{topic}: retained command ignored: commands act once, when they arrive "
            "(clear it with an empty retained message)"
        )
        self._reply_error(CommandError("retained", message), payload)

    # ---- effect (the daemon's main thread) -----------------------------------------------------

    def _parse(self, topic: str, payload: bytes, streams: list[str]) -> Command:
        if topic == self.topics.cmd:
            return parse_command(payload, max_bytes=self.max_bytes, streams=streams)
        playing = self.topics.stream_of_playing_set(topic)
        if playing is not None:
            return parse_switch_set(topic, playing, payload, streams=streams, payloads=PLAYING_PAYLOADS)
        follow_up = self.topics.stream_of_follow_up_set(topic)
        if follow_up is not None:
            return parse_switch_set(topic, follow_up, payload, streams=streams, payloads=FOLLOW_UP_PAYLOADS)
        stream = self.topics.stream_of_mute_set(topic)
        return parse_mute_set(topic, stream or "", payload, streams=streams)

    def run(self, daemon: DaemonControl) -> None:
        while True:
            try:
                topic, payload = self._queue.get_nowait()
            except queue.Empty:
                return
            try:
                cmd = self._parse(topic, payload, list(daemon.stream_names()))
            except CommandError as e:
                log.warning("MQTT command refused: %s", sendable(e.message))
                self._reply_error(e, payload)
                continue
            log.info("MQTT command: %s%s", cmd.name, f" {cmd.stream}" if cmd.stream else "")
            try:
                self.table.run(daemon, cmd)
            except CommandError as e:  # a handler's refusal (e.g. follow-up on a stream without a wake word)
                log.warning("MQTT command refused: %s", sendable(e.message))
                self._reply_error(e, payload)

    def _set_muted(self, daemon: DaemonControl, stream: str, muted: bool) -> None:
        daemon.set_muted(stream, muted)
        error = self.record.change(stream, muted)
        if error is not None:
            log.error(
                "MQTT: stream %s is %s now, but a restart would not know it: %s",
                stream,
                "muted" if muted else "unmuted",
                error,
            )
        self._publish_mute_state(stream, muted)  # the HA switch's state
        self.reporter.request()

    def _set_follow_up(self, daemon: DaemonControl, cmd: Command) -> None:
        assert cmd.stream is not None
        on = cmd.name == "follow_up_on"
        try:
            daemon.set_follow_up(cmd.stream, on)
        except KeyError:
            message = f"{cmd.name}: stream {cmd.stream!r} listens for no wake word ([wake]); follow-up needs one"
            raise CommandError("bad_argument", message, cmd.name, cmd.id) from None
        self.publisher.publish_now(self.topics.follow_up_state(cmd.stream), "ON" if on else "OFF", qos=1, retain=True)

    def _set_playing(self, daemon: DaemonControl, cmd: Command) -> None:
        stream, on = _stream(cmd), cmd.name == "playing_on"
        try:
            daemon.set_playing(stream, on)
        except KeyError:
            raise CommandError(
                "unknown_stream", f"{cmd.name}: stream {stream!r} is not running", cmd.name, cmd.id
            ) from None
        self.publisher.publish_now(self.topics.playing_state(stream), "ON" if on else "OFF", qos=1, retain=True)
        self.reporter.request()  # health says so at once, as for a mute

    def _memory_snapshot(self, cid: str | None) -> None:
        # tracemalloc snapshots take long enough to delay the main thread's tick (and the watchdog).
        if not self._memory_busy.acquire(blocking=False):
            self._reply_error(CommandError("busy", "a memory snapshot is already being taken", "memory", cid), b"")
            return
        self._memory_jobs.put((cid,))

    def _memory_worker(self) -> None:
        while (job := self._memory_jobs.get()) is not None:
            (cid,) = job
            try:
                result = {"id": cid, "time": iso8601(time.time()), **self._traces.take()}
                self.publisher.publish_now(self.topics.debug_memory, dumps(result), qos=1)
            except Exception:  # noqa: BLE001
                log.exception("memory snapshot failed")
            finally:
                self._memory_busy.release()

    def _reply_error(self, err: CommandError, payload: bytes) -> None:
        self.publisher.publish_now(self.topics.error, dumps(error_reply(err, payload, iso8601(time.time()))), qos=1)


def _stream(cmd: Command) -> str:
    assert cmd.stream is not None  # the parsers require it for mute and unmute
    return cmd.stream
