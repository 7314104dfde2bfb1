"""Settings written where they can never take effect, refused when a user would lose something without a
word (a microphone, its echo cancellation). Those only left over are warned about (config/dependent.py).

Before (stop 46, audit3): `[audio] device` beside `[[streams]]`, a stream's echo reference that is another
stream's microphone and `wake.follow_up_s` with no wake word all passed check-config, run and a reload.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from voxnode.config.audio import AudioConfig
from voxnode.config.fields import InvalidValue
from voxnode.config.wording import toml_value

if TYPE_CHECKING:
    from voxnode.config.root import Config

# The [audio] keys that describe its single stream ("mic"). [[streams]] replace that stream and each
# names its own; the other [audio] keys (resample, buffer_periods, ring_seconds, retry_initial_s,
# retry_max_s) apply to every stream. A reference file copied whole writes them all at their defaults,
# so only a value other than the default is refused ("" = no microphone, true of [[streams]] too).
SINGLE_STREAM_KEYS = ("device", "channel", "channels", "area", "echo_reference")


def check_unused(config: Config) -> None:
    """Raise InvalidValue (its key from the top: "audio.device") for a setting that can never take
    effect where it is written."""
    if config.streams:
        default = AudioConfig()
        for key in SINGLE_STREAM_KEYS:
            value = getattr(config.audio, key)
            if value != getattr(default, key) and not (key == "device" and value == ""):
                raise InvalidValue(
                    f"audio.{key}",
                    f"not used with [[streams]] ({len(config.streams)} configured): each stream has its own {key}, "
                    "and the single [audio] stream is not run; set it in the [[streams]] tables, or remove it "
                    "from [audio]",
                    value,
                )
    first_with: dict[str, int] = {}
    for i, s in enumerate(config.streams):
        first_with.setdefault(s.device, i)
    for i, s in enumerate(config.streams):
        j = first_with.get(s.echo_reference)
        if s.echo_reference and j is not None and j != i:
            raise InvalidValue(
                f"streams[{i}].echo_reference",
                f"is the microphone of streams[{j}] ({toml_value(config.streams[j].name)}): the echo reference "
                "must carry what the node plays (a loopback, a dsnoop of the output, a monitor)",
                s.echo_reference,
            )
