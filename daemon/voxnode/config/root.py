"""The whole configuration: one immutable object, built once and passed down."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from voxnode.config.adapt import AdaptConfig
from voxnode.config.asr import AsrConfig
from voxnode.config.audio import AudioConfig, StreamConfig
from voxnode.config.delivery import DeliveryConfig
from voxnode.config.dependent import dependent_warnings
from voxnode.config.fields import InvalidValue, section, table_list
from voxnode.config.frontend import FrontendConfig
from voxnode.config.health import HealthConfig
from voxnode.config.log import LogConfig
from voxnode.config.mqtt import MqttConfig
from voxnode.config.service import ServiceConfig
from voxnode.config.stream import StreamingConfig
from voxnode.config.unused import check_unused
from voxnode.config.vad import VadConfig
from voxnode.config.wake import STREAM_WAKE_OFF, STREAM_WAKE_ON, WakeConfig, wake_spec_problem
from voxnode.config.wording import BUILT_IN
from voxnode.config.wyoming import WyomingConfig
from voxnode.outputs.webhook import WebhookConfig


@dataclass(frozen=True)
class Config:
    log: LogConfig = section(LogConfig, "Logging (stderr, or journald under systemd).")
    audio: AudioConfig = section(
        AudioConfig,
        'Audio capture. Without [[streams]] this is the one stream, named "mic"; with them, device, channel, '
        "channels, area and echo_reference are each stream's own (refused here unless left at their defaults) "
        "and the rest applies to every stream.",
    )
    streams: tuple[StreamConfig, ...] = table_list(
        StreamConfig,
        "Several microphones in one process: one [[streams]] table each. Replaces the single [audio] device.",
        example={"name": "kitchen", "device": "plughw:1,0", "channel": 0, "area": "Kitchen"},
    )
    asr: AsrConfig = section(AsrConfig, "Speech recognition.")
    frontend: FrontendConfig = section(FrontendConfig, "Audio clean-up before VAD and recognition.")
    vad: VadConfig = section(
        VadConfig,
        "Voice activity detection and endpointing. Durations count in 20 ms frames, rounded up (250 waits 260 ms).",
    )
    stream: StreamingConfig = section(StreamingConfig, "Utterances, partial transcripts, sharing the engine.")
    delivery: DeliveryConfig = section(
        DeliveryConfig, "Durable delivery: the spool that numbers finals and keeps them for stdout, MQTT, webhook."
    )
    mqtt: MqttConfig = section(
        MqttConfig, "MQTT: transcripts, health, commands, Home Assistant discovery (docs/mqtt.md)."
    )
    health: HealthConfig = section(HealthConfig, "Health report, memory housekeeping, leak watch, Prometheus.")
    service: ServiceConfig = section(ServiceConfig, "Running as a service: shutdown bound, watchdog stall limits.")
    wake: WakeConfig = section(WakeConfig, "Wake word: transcribe only what follows it (docs/voice-assistant.md).")
    webhook: WebhookConfig = section(WebhookConfig, "Webhook: each final POSTed as JSON, retried until accepted.")
    adapt: AdaptConfig = section(
        AdaptConfig, "Audio kept on this node for `voxnode adapt` (docs/adapt.md); off by default, never published."
    )
    wyoming: WyomingConfig = section(
        WyomingConfig, "Wyoming speech-to-text server for Home Assistant Assist (docs/voice-assistant.md)."
    )
    # Where it was read (the file's path; load_config sets it). Not a key of the file: not read from it,
    # not rendered, not compared. Messages about the settings open with it (config/wording.py).
    source: str = dataclasses.field(
        default=BUILT_IN, compare=False, repr=False, metadata={"doc": "where it was read", "not_a_key": True}
    )

    def check(self) -> None:
        names = [s.name for s in self.streams]
        for i, name in enumerate(names):
            if name in names[:i]:
                first = names.index(name)
                raise InvalidValue(
                    f"streams[{i}].name", f"streams[{first}] has this name too; give each stream its own", name
                )
        problem = wake_spec_problem(self.wake.model)
        if problem:
            raise InvalidValue("wake.model", problem, self.wake.model)
        for i, s in enumerate(self.streams):
            problem = None if s.wake in ("", STREAM_WAKE_OFF, STREAM_WAKE_ON) else wake_spec_problem(s.wake)
            if problem:
                raise InvalidValue(f"streams[{i}].wake", problem, s.wake)
        w, h = self.wyoming, self.health
        if w.enabled and h.prometheus and w.port == h.prometheus_port and _same_listener(w.host, h.prometheus_host):
            # Before: passed; `run` stopped on "cannot listen ... is another Wyoming server using the port?"
            raise InvalidValue("wyoming.port", "health.prometheus_port is the same port; give each its own", w.port)
        if not self.effective_streams() and not self.wyoming.enabled:
            raise InvalidValue(
                "audio.device",
                "no microphone, and [wyoming] is not enabled: there is nothing to do; "
                "set audio.device, add [[streams]] or enable [wyoming]",
                "",
            )
        check_unused(self)

    def warnings(self) -> list[str]:
        """Settings left over where they do nothing, as the key they depend on is off (config/dependent.py),
        each a line opened with the file and the key: check-config prints them, run and every reload log
        them; the config still loads."""
        return [f"{self.source}: {line}" for line in dependent_warnings(self)]

    def effective_streams(self) -> tuple[StreamConfig, ...]:
        """The streams to run: the [[streams]] tables, or the single [audio] device."""
        if self.streams:
            return self.streams
        a = self.audio
        if not a.device:
            return ()  # no microphone: the Wyoming server alone (Config.check requires it then)
        return (
            StreamConfig(
                name="mic",
                device=a.device,
                channel=a.channel,
                channels=a.channels,
                area=a.area,
                echo_reference=a.echo_reference,
            ),
        )

    def with_device(self, device: str) -> Config:
        """`voxnode run --device`: override the single stream's device."""
        if self.streams:
            from voxnode.errors import ConfigError

            raise ConfigError(
                f"--device {device!r} cannot be used with [[streams]] ({len(self.streams)} configured): "
                "set each stream's device in the config file"
            )
        if device == self.audio.echo_reference:  # as AudioConfig.check refuses it in the file
            from voxnode.errors import ConfigError

            raise ConfigError(
                f"--device {device!r} is audio.echo_reference too: the echo reference must carry what the node plays"
            )
        return dataclasses.replace(self, audio=dataclasses.replace(self.audio, device=device))


def _same_listener(a: str, b: str) -> bool:
    """Whether servers listening on hosts `a` and `b` (on one port) collide: the same address, or either
    listens on every address."""
    return a == b or {a, b} & {"", "0.0.0.0", "::"} != set()
