"""Which discovery messages to publish, and when: the node's Home Assistant devices kept in step with
its config and capabilities, with nothing left behind.

What Home Assistant knows is what the broker retains on the discovery topics. The service
subscribes to them (its own node and stream device topics) on every connect; the retained copies
it gets back, whatever run or version wrote them, are fed to `saw_retained`. So:
- a component the broker still holds but this run does not announce (a stream removed on reload
  or while the daemon was down, a sensor the board cannot feed, an entity an older version had)
  is re-sent once as a tombstone {"p": platform}, and a removed stream's whole device likewise;
- tombstones stay in the node's and current streams' retained messages, so a Home Assistant that
  was down at the time still removes the entity when it starts and reads them;
- with `mqtt.discovery = false` every retained discovery message of this node is replaced by an
  empty one: Home Assistant removes the devices and the broker forgets the topic.

Main thread only (the service's tick); no locks.
"""

from __future__ import annotations

import json
import logging

from voxnode.events import dumps
from voxnode.mqtt.capabilities import Capabilities
from voxnode.mqtt.discovery import (
    StreamDevice,
    node_payload,
    stream_payload,
    stream_tombstone_payload,
    tombstones,
)
from voxnode.mqtt.topics import Topics

log = logging.getLogger("voxnode.mqtt")


class Announcer:
    def __init__(self, topics: Topics, *, enabled: bool, board: str | None, backlog_limit: int):
        self.topics = topics
        self.enabled = enabled
        self.board = board
        self.backlog_limit = backlog_limit
        self._streams: tuple[StreamDevice, ...] = ()
        self._caps: Capabilities | None = None  # None until the first health report
        # Per discovery topic: component key -> (platform, live). live = a full config that Home
        # Assistant may hold; not live = already sent as a tombstone.
        self._known: dict[str, dict[str, tuple[str, bool]]] = {}
        self._last: dict[str, bytes] = {}  # what this connection last published per topic
        self._to_clear: set[str] = set()  # discovery off: retained messages to replace with ""
        self._force = False
        self._dirty = False  # something changed since the last pending(): it runs every tick, cheaply

    # ---- what the node is -----------------------------------------------------------------------

    def set_streams(self, streams: list[StreamDevice] | tuple[StreamDevice, ...]) -> None:
        self._dirty |= tuple(streams) != self._streams
        self._streams = tuple(streams)

    def add_capabilities(self, report: dict) -> None:
        caps = Capabilities.from_health(report)
        caps = caps if self._caps is None else self._caps | caps
        self._dirty |= caps != self._caps
        self._caps = caps

    @property
    def ready(self) -> bool:
        return self._caps is not None

    # ---- what the broker holds ------------------------------------------------------------------

    def is_discovery_topic(self, topic: str) -> bool:
        return topic == self.topics.discovery or self.topics.stream_of_discovery(topic) is not None

    def saw_retained(self, topic: str, payload: bytes) -> None:
        """A retained discovery message of this node, as the broker handed it over on subscribe."""
        if not payload:
            return
        self._dirty = True
        if not self.enabled:
            self._to_clear.add(topic)
            return
        try:
            data = json.loads(payload)
            cmps = data["cmps"] if isinstance(data, dict) else None
        except (ValueError, KeyError, TypeError):
            cmps = None
        if not isinstance(cmps, dict):
            # Not ours to read (hand-written?): what it declares is unknown, so replace it outright.
            log.warning("MQTT: retained discovery message on %s is not a device config; replacing it", topic)
            self._last.pop(topic, None)
            return
        known = self._known.setdefault(topic, {})
        for key, cfg in cmps.items():
            if not isinstance(cfg, dict):
                continue
            platform = cfg.get("p") or cfg.get("platform")
            if not isinstance(platform, str):
                continue
            live = len(cfg) > 1
            was = known.get(key)
            known[key] = (platform, live or (was is not None and was[1]))

    def force(self) -> None:
        """Publish everything again on the next `pending()` (a connect, Home Assistant came online)."""
        self._force = self._dirty = True
        self._last.clear()

    # ---- what to publish ------------------------------------------------------------------------

    def pending(self) -> list[tuple[str, bytes]]:
        """Messages (all retained, QoS 1) to publish now; empty when nothing changed."""
        if not self._dirty:
            return []
        self._dirty = False
        if not self.enabled:
            out = [(topic, b"") for topic in sorted(self._to_clear)]
            self._to_clear.clear()
            return out
        if self._caps is None:
            self._dirty = True  # still to do, once the first health report is in
            return []  # entities depend on what it shows
        desired: dict[str, dict] = {}
        node_topic = self.topics.discovery
        desired[node_topic] = node_payload(self.topics, self._caps, board=self.board, backlog_limit=self.backlog_limit)
        for stream in self._streams:
            desired[self.topics.stream_discovery(stream.name)] = stream_payload(self.topics, stream)
        for topic, payload in desired.items():
            gone = {k: p for k, (p, _live) in self._known.get(topic, {}).items() if k not in payload["cmps"]}
            payload["cmps"].update(tombstones(gone))
        for topic, known in self._known.items():
            gone_stream = self.topics.stream_of_discovery(topic)
            if topic not in desired and gone_stream is not None and any(live for _, live in known.values()):
                desired[topic] = stream_tombstone_payload(
                    self.topics, gone_stream, {k: p for k, (p, _) in known.items()}
                )
        out = []
        for topic, payload in desired.items():
            data = dumps(payload)
            if self._force or self._last.get(topic) != data:
                out.append((topic, data))
                self._last[topic] = data
            known = self._known.setdefault(topic, {})
            for key, cfg in payload["cmps"].items():
                known[key] = (cfg["p"], len(cfg) > 1)
        self._force = False
        return out
