"""`voxnode mqtt-forget`: remove this node's retained messages from the broker.

`make uninstall` / `make purge` run it (scripts/install.sh) after stopping the
service: every retained message under {prefix}/{node}/ (status, health, mute
states) and this node's Home Assistant discovery configs ({discovery_prefix}/
device/{node}/config and .../{node}/{stream}/config) is replaced by an empty
retained message. Home Assistant then removes the node's devices and entities,
and the broker forgets the topics.

Which retained messages exist is learnt from the broker: subscribe to them, then
publish a marker (not retained) on a topic that the same subscription covers.
The broker hands over the retained messages as it handles the SUBSCRIBE, before
it handles the marker's PUBLISH, so once the marker comes back every retained
message has arrived; no guessed wait.
"""

from __future__ import annotations

import logging
import os
import threading
import time

from voxnode.config import Config
from voxnode.errors import VoxnodeError
from voxnode.mqtt.connection import make_paho_client
from voxnode.mqtt.topics import Topics

log = logging.getLogger("voxnode.mqtt")


class ForgetError(VoxnodeError):
    pass


def forget(config: Config, *, timeout_s: float = 15.0) -> list[str]:
    """Clear this node's retained messages; returns the topics cleared. Raises ForgetError."""
    c = config.mqtt
    topics = Topics.from_config(c)
    marker = f"{topics.base}/forget/{os.getpid()}-{time.monotonic_ns()}"
    filters = [f"{topics.base}/#", topics.discovery, topics.stream_discovery_filter]
    client = make_paho_client(c, f"voxnode-{topics.node}-forget-{os.getpid()}")
    retained: dict[str, bytes] = {}
    lock = threading.Lock()
    connected, marker_back = threading.Event(), threading.Event()
    refused: list[str] = []

    def on_connect(cl, userdata, flags, reason_code, properties):
        if reason_code.is_failure:
            refused.append(str(reason_code))
            connected.set()
            return
        cl.subscribe([(f, 1) for f in filters])
        cl.publish(marker, b"", qos=1)  # empty, not retained: nothing is stored
        connected.set()

    def on_message(cl, userdata, msg):
        if msg.topic == marker:
            marker_back.set()
        elif msg.retain and msg.payload:
            with lock:
                retained[msg.topic] = msg.payload

    client.on_connect = on_connect
    client.on_message = on_message
    where = f"{c.host}:{c.effective_port}"
    try:
        client.connect(c.host, c.effective_port, keepalive=c.keepalive)
    except OSError as e:
        raise ForgetError(
            f"mqtt-forget: cannot connect to the broker {where} (mqtt.host/mqtt.port): {e.strerror or e}"
        ) from None
    client.loop_start()
    try:
        deadline = time.monotonic() + timeout_s
        if not connected.wait(timeout_s) or refused:
            why = refused[0] if refused else "no answer"
            raise ForgetError(f"mqtt-forget: the broker {where} did not accept the connection: {why}")
        if not marker_back.wait(max(0.1, deadline - time.monotonic())):
            raise ForgetError(
                f"mqtt-forget: the broker {where} did not echo the marker on {marker} within "
                f"{timeout_s:.0f} s (does the ACL let this user read and write {topics.base}/#?)"
            )
        with lock:
            todo = sorted(retained)
        infos = [client.publish(topic, b"", qos=1, retain=True) for topic in todo]
        for topic, info in zip(todo, infos, strict=True):
            info.wait_for_publish(max(0.1, deadline - time.monotonic()))
            if not info.is_published():
                raise ForgetError(f"mqtt-forget: clearing {topic} was not acknowledged by {where}")
        return todo
    finally:
        client.disconnect()
        client.loop_stop()
