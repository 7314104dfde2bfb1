"""`voxnode devices`: which capture PCMs exist and what each can do."""

from __future__ import annotations

from dataclasses import dataclass

import alsaaudio

from voxnode.audio.alsa_open import supported_rates
from voxnode.audio.format import SAMPLE_RATE


@dataclass(frozen=True)
class DeviceInfo:
    name: str
    description: str
    rates: str
    formats: str
    supports_16k: bool | None
    error: str = ""


def list_capture_devices(probe: bool = True) -> list[DeviceInfo]:
    devices = []
    for name in alsaaudio.pcms(alsaaudio.PCM_CAPTURE):
        devices.append(_probe(name) if probe else DeviceInfo(name, "", "", "", None))
    return devices


def _probe(name: str) -> DeviceInfo:
    try:
        # Non-blocking so a device held by another program does not hang the listing.
        pcm = alsaaudio.PCM(type=alsaaudio.PCM_CAPTURE, mode=alsaaudio.PCM_NONBLOCK, device=name)
    except alsaaudio.ALSAAudioError as e:
        return DeviceInfo(name, "", "", "", None, error=str(e))
    try:
        rates = supported_rates(pcm)
        try:
            lo, hi = pcm.getratebounds()
            ok = lo <= SAMPLE_RATE <= hi
        except Exception:
            ok = None
        try:
            formats = ", ".join(sorted(pcm.getformats()))
        except Exception:
            formats = "unknown"
        return DeviceInfo(name, pcm.cardname(), rates, formats, ok)
    finally:
        pcm.close()


def format_devices(devices: list[DeviceInfo]) -> str:
    if not devices:
        return "no ALSA capture devices found (is the user in the 'audio' group? is a microphone plugged in?)"
    lines = []
    for d in devices:
        if d.error:
            lines.append(f"{d.name}: cannot open: {d.error}")
            continue
        note = {True: "16 kHz ok", False: "no 16 kHz: use plug or audio.resample = \"alsa\"", None: "?"}[d.supports_16k]
        lines.append(f"{d.name}: rates {d.rates}; formats {d.formats}; {note}")
    return "\n".join(lines)
