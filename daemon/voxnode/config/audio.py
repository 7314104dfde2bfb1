"""[audio] and [[streams]]: where sound comes from."""

from dataclasses import dataclass

from voxnode.config.fields import InvalidValue, setting

STREAM_NAME_PATTERN = r"[A-Za-z0-9_-]{1,32}"
# A Home Assistant area name: printable text, no control characters, at most 100 characters.
AREA_PATTERN = r"[^\x00-\x1f\x7f]{1,100}"
AREA_DOC = (
    'Home Assistant area suggested for this stream\'s device, e.g. "Kitchen" '
    '(used when Home Assistant first sees the device); "" = none.'
)

ECHO_DOC = (
    "ALSA capture PCM carrying what the node plays (a loopback device, a dsnoop of the output, a "
    "PipeWire/PulseAudio monitor): its echo is cancelled from the microphone (WebRTC AEC3, "
    'docs/voice-assistant.md); "" = no echo cancellation.'
)


@dataclass(frozen=True)
class AudioConfig:
    device: str = setting(
        "default",
        'ALSA capture PCM of the single default stream (see `voxnode devices`); "" = no microphone '
        "(a Wyoming server only).",
    )
    channel: int = setting(0, "Channel of a multi-channel device that carries the voice (0 = first).", min=0, max=31)
    channels: int = setting(0, "Channels to open the device with; 0 = just enough for `channel`.", min=0, max=32)
    resample: str = setting(
        "alsa",
        'If the device refuses 16 kHz: "alsa" reopens it through ALSA\'s plug layer, "off" fails.',
        choices=("alsa", "off"),
    )
    buffer_periods: int = setting(
        16,
        "ALSA buffer size in 20 ms periods; more survives scheduling hiccups. In silence the capture lets up "
        "to 8 periods fill before it reads them in one go, keeping 8 free for a late read (with 8 or fewer "
        "it reads every period as it comes).",
        min=2,
        max=64,
    )
    ring_seconds: float = setting(
        10.0,
        "Capture ring buffer per stream, in seconds; when full the oldest audio is dropped (counted).",
        min=0.5,
        max=300.0,
    )
    retry_initial_s: float = setting(
        1.0, "First retry delay after a device fails to open or disappears.", min=0.1, max=60.0
    )
    retry_max_s: float = setting(30.0, "Longest retry delay (the delay doubles up to this).", min=1.0, max=3600.0)
    area: str = setting(
        "", AREA_DOC.replace("this stream's", 'the single stream\'s ("mic")'), pattern=AREA_PATTERN, compare=False
    )
    echo_reference: str = setting("", ECHO_DOC.replace("the microphone", 'the single stream\'s ("mic") microphone'))

    def check(self) -> None:
        if self.channels and self.channel >= self.channels:
            raise InvalidValue("channel", channel_beyond(self.channels))
        if self.echo_reference and self.echo_reference == self.device:  # as [[streams]]' (it passed here)
            raise InvalidValue(
                "echo_reference", "must not be the microphone's own device: it must carry what the node plays"
            )
        if self.retry_max_s < self.retry_initial_s:
            raise InvalidValue("retry_max_s", f"must not be smaller than retry_initial_s ({self.retry_initial_s})")


@dataclass(frozen=True)
class StreamConfig:
    name: str = setting("", "Stream name, used in topics and logs.", pattern=STREAM_NAME_PATTERN)
    device: str = setting("", "ALSA capture PCM of this stream.")
    channel: int = setting(0, "Channel of a multi-channel device that carries the voice.", min=0, max=31)
    channels: int = setting(0, "Channels to open the device with; 0 = just enough for `channel`.", min=0, max=32)
    prompt: str = setting("", 'This stream\'s recognition prompt; "" = [asr] prompt.')
    hotwords: tuple[str, ...] = setting((), "This stream's hotwords; [] = [asr] hotwords.")
    wake: str = setting(
        "",
        'Wake word for this stream: "" = as [wake], "off", "on" (the [wake] model), or model names or paths '
        "(comma-separated for several).",
    )
    area: str = setting("", AREA_DOC, pattern=AREA_PATTERN, compare=False)
    echo_reference: str = setting("", ECHO_DOC)

    def check(self) -> None:
        if not self.name:
            raise InvalidValue("name", "is required in every [[streams]] table")
        if not self.device:
            raise InvalidValue("device", "is required in every [[streams]] table")
        if self.channels and self.channel >= self.channels:
            raise InvalidValue("channel", channel_beyond(self.channels))
        if self.echo_reference and self.echo_reference == self.device:
            raise InvalidValue(
                "echo_reference", "must not be the stream's own device: it must carry what the node plays"
            )

    @property
    def open_channels(self) -> int:
        return self.channels or self.channel + 1


def channel_beyond(channels: int) -> str:
    """Why a channel number is not one of the `channels` the device is opened with."""
    return f"must be less than channels ({channels}): the device is opened with {channels} channels, numbered from 0"
