"""Every topic voxnode uses, in one place (documented in docs/mqtt.md)."""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass

from voxnode.config.mqtt import MqttConfig


def sanitize_node_id(name: str) -> str:
    """A host name -> a topic- and Home-Assistant-safe id ([a-zA-Z0-9_-], at most 64 characters)."""
    cleaned = re.sub(r"[^A-Za-z0-9_-]", "_", name.split(".")[0] if name else "")[:64]
    return cleaned or "voxnode"


def node_id_for(config: MqttConfig) -> str:
    return config.node_id or sanitize_node_id(socket.gethostname())


@dataclass(frozen=True)
class Topics:
    prefix: str
    node: str
    discovery_prefix: str = "homeassistant"

    @classmethod
    def from_config(cls, config: MqttConfig) -> Topics:
        return cls(config.topic_prefix, node_id_for(config), config.discovery_prefix)

    @property
    def base(self) -> str:
        return f"{self.prefix}/{self.node}"

    @property
    def status(self) -> str:
        return f"{self.base}/status"

    @property
    def health(self) -> str:
        return f"{self.base}/health"

    @property
    def cmd(self) -> str:
        return f"{self.base}/cmd"

    @property
    def error(self) -> str:
        return f"{self.base}/error"

    @property
    def debug_memory(self) -> str:
        return f"{self.base}/debug/memory"

    def transcript(self, stream: str) -> str:
        return f"{self.base}/{stream}/transcript"

    def partial(self, stream: str) -> str:
        return f"{self.base}/{stream}/partial"

    @property
    def discovery(self) -> str:
        return f"{self.discovery_prefix}/device/{self.node}/config"

    @property
    def ha_status(self) -> str:
        return f"{self.discovery_prefix}/status"
