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
    def sync(self) -> str:
        """An empty marker the node sends itself after subscribing: its echo comes after every
        retained message the subscriptions brought (the broker handles packets in order)."""
        return f"{self.base}/sync"

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

    # Mute as its own topics, the convention Frigate users know: ON/OFF in, retained ON/OFF out.
    def mute_set(self, stream: str) -> str:
        return f"{self.base}/{stream}/mute/set"

    def mute_state(self, stream: str) -> str:
        return f"{self.base}/{stream}/mute/state"

    @property
    def mute_set_filter(self) -> str:
        return f"{self.base}/+/mute/set"

    @property
    def mute_state_filter(self) -> str:
        return f"{self.base}/+/mute/state"

    def stream_of_mute_set(self, topic: str) -> str | None:
        """The stream named in a {base}/{stream}/mute/set topic, else None."""
        return self._stream_between(topic, f"{self.base}/", "/mute/set")

    def stream_of_mute_state(self, topic: str) -> str | None:
        return self._stream_between(topic, f"{self.base}/", "/mute/state")

    # The follow-up switch of a stream with a wake word (wake.follow_up_s), as mute: ON/OFF in, retained out.
    def follow_up_set(self, stream: str) -> str:
        return f"{self.base}/{stream}/follow_up/set"

    def follow_up_state(self, stream: str) -> str:
        return f"{self.base}/{stream}/follow_up/state"

    @property
    def follow_up_set_filter(self) -> str:
        return f"{self.base}/+/follow_up/set"

    def stream_of_follow_up_set(self, topic: str) -> str | None:
        return self._stream_between(topic, f"{self.base}/", "/follow_up/set")

    # The `playing` input of a stream (issue 24; the switch Home Assistant shows as "Playing"): ON/OFF
    # in on {stream}/playing, as the issue names it, the state retained out on {stream}/playing/state.
    def playing_set(self, stream: str) -> str:
        return f"{self.base}/{stream}/playing"

    def playing_state(self, stream: str) -> str:
        return f"{self.base}/{stream}/playing/state"

    @property
    def playing_set_filter(self) -> str:
        return f"{self.base}/+/playing"

    def stream_of_playing_set(self, topic: str) -> str | None:
        return self._stream_between(topic, f"{self.base}/", "/playing")

    @staticmethod
    def _stream_between(topic: str, head: str, tail: str) -> str | None:
        if topic.startswith(head) and topic.endswith(tail) and len(topic) > len(head) + len(tail):
            stream = topic[len(head) : -len(tail)]
            if "/" not in stream:
                return stream
        return None

    # Home Assistant device discovery: the node is one device, each stream one more (via the node),
    # so a stream can sit in its own area.
    @property
    def discovery(self) -> str:
        return f"{self.discovery_prefix}/device/{self.node}/config"

    def stream_discovery(self, stream: str) -> str:
        return f"{self.discovery_prefix}/device/{self.node}/{stream}/config"

    @property
    def stream_discovery_filter(self) -> str:
        return f"{self.discovery_prefix}/device/{self.node}/+/config"

    def stream_of_discovery(self, topic: str) -> str | None:
        """The stream of a stream device's discovery topic, else None (the node's own topic too)."""
        return self._stream_between(topic, f"{self.discovery_prefix}/device/{self.node}/", "/config")

    @property
    def ha_status(self) -> str:
        return f"{self.discovery_prefix}/status"
