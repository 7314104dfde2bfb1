"""Opening an ALSA capture PCM and checking what it really granted.

ALSA does not fail when a device cannot do 16 kHz: a `hw` device silently
opens at its own rate, and a model fed 48 kHz audio as if it were 16 kHz
produces confident garbage. So after every open we compare what was granted
with what we asked for, and either go through ALSA's plug layer (which
converts rate, channels and format) or fail with a message that says why.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from voxnode.audio.alsa_pcm import CapturePcm, PcmError
from voxnode.audio.format import PERIOD_FRAMES, SAMPLE_RATE
from voxnode.audio.pcm_route import open_hint
from voxnode.errors import AudioDeviceError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class OpenedPcm:
    pcm: CapturePcm
    device: str  # what was actually opened (maybe the plug: wrapper)
    requested_device: str
    channels: int
    period_frames: int
    buffer_frames: int
    resampled_from: int | None  # the device's own rate when ALSA converts it

    def as_dict(self) -> dict:
        return {
            "device": self.device,
            "rate": SAMPLE_RATE,
            "channels": self.channels,
            "period_frames": self.period_frames,
            "buffer_frames": self.buffer_frames,
            "resampled_from": self.resampled_from,
        }


def plug_name(device: str) -> str:
    """The ALSA name that puts `device` behind the plug (conversion) plugin."""
    if device.startswith("plug"):
        return device
    if device.startswith("hw:"):
        return "plug" + device  # plughw:1,0
    return f"plug:'{device}'"


def _open(device: str, channels: int, periods: int) -> CapturePcm:
    """Through ctypes (audio/alsa_pcm.py): an open that blocks holds only the calling thread."""
    try:
        return CapturePcm(device, channels, SAMPLE_RATE, PERIOD_FRAMES, periods)
    except PcmError as e:
        hint = open_hint(device, e.code, str(e))  # a sound server the service cannot reach, a busy card
        raise AudioDeviceError(f"cannot open ALSA capture device {device!r}: {e}{hint}") from None


def _mismatches(info: dict, channels: int) -> list[str]:
    problems = []
    if info.get("rate") != SAMPLE_RATE:
        problems.append(f"rate {info.get('rate')} Hz instead of {SAMPLE_RATE}")
    if info.get("channels") != channels:
        problems.append(f"{info.get('channels')} channels instead of {channels}")
    if info.get("format_name") != "S16_LE":
        problems.append(f"format {info.get('format_name')} instead of S16_LE")
    return problems


def supported_rates(pcm: Any) -> str:
    """`pcm`: a CapturePcm, or pyalsaaudio's PCM (`voxnode devices`)."""
    try:
        lo, hi = pcm.getratebounds()
    except Exception:  # some plugins cannot report; the message still helps without it
        return "unknown"
    return f"{lo} Hz" if lo == hi else f"{lo}-{hi} Hz"


def open_capture(device: str, channels: int, periods: int, resample: str) -> OpenedPcm:
    """Open `device` for S16_LE 16 kHz capture, or raise AudioDeviceError saying why not."""
    pcm = _open(device, channels, periods)
    info = pcm.info()
    problems = _mismatches(info, channels)
    resampled_from = None
    opened = device
    if problems:
        native_rate = info.get("rate")
        rates = supported_rates(pcm)
        pcm.close()
        if resample != "alsa":
            raise AudioDeviceError(
                f"ALSA device {device!r} granted {', '.join(problems)} (it supports {rates}); "
                'set audio.resample = "alsa" to convert in ALSA\'s plug layer, or choose a device that does 16 kHz'
            )
        opened = plug_name(device)
        pcm = _open(opened, channels, periods)
        info = pcm.info()
        still = _mismatches(info, channels)
        if still:
            pcm.close()
            raise AudioDeviceError(f"ALSA device {opened!r} still granted {', '.join(still)} through the plug layer")
        if native_rate != SAMPLE_RATE:
            resampled_from = native_rate
            # The plug layer converts a period at a time, so audio reaches us
            # about one of its periods later than it would natively.
            log.warning(
                "device %r runs at %s Hz; ALSA's plug layer resamples to %d Hz "
                "(adds about %.0f ms of latency, and its default converter is simple linear interpolation)",
                device,
                native_rate,
                SAMPLE_RATE,
                1000.0 * info.get("period_size", PERIOD_FRAMES) / SAMPLE_RATE,
            )
        else:
            log.warning("device %r: ALSA's plug layer converts %s", device, ", ".join(problems))
    return OpenedPcm(
        pcm=pcm,
        device=opened,
        requested_device=device,
        channels=channels,
        period_frames=int(info.get("period_size", PERIOD_FRAMES)),
        buffer_frames=int(info.get("buffer_size", 0)),
        resampled_from=resampled_from,
    )
