"""Every topic voxnode uses, in one place (documented in docs/mqtt.md)."""

from __future__ import annotations

from dataclasses import dataclass

from voxnode.config.mqtt import MqttConfig, node_id_for


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

    def wake(self, stream: str) -> str:
        return f"{self.base}/{stream}/wake"

    @property
    def discovery(self) -> str:
        return f"{self.discovery_prefix}/device/{self.node}/config"

    @property
    def ha_status(self) -> str:
        return f"{self.discovery_prefix}/status"
