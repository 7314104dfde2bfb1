"""`voxnode devices`: which capture PCMs exist and what each can do."""

from __future__ import annotations

import dataclasses
import json
import select
import signal
import subprocess
import sys
from dataclasses import dataclass

import alsaaudio

from voxnode.audio.alsa_open import supported_rates
from voxnode.audio.format import SAMPLE_RATE
from voxnode.errors import AudioDeviceError
from voxnode.process_stop import stop_process


@dataclass(frozen=True)
class DeviceInfo:
    name: str
    description: str
    rates: str
    formats: str
    supports_16k: bool | None
    error: str = ""


PROBE_TIMEOUT_S = 5.0


def list_capture_devices(probe: bool = True) -> list[DeviceInfo]:
    names = list(alsaaudio.pcms(alsaaudio.PCM_CAPTURE))
    if not probe:
        return [DeviceInfo(n, "", "", "", None) for n in names]
    return _probe_in_child(names)


def _probe_in_child(names: list[str]) -> list[DeviceInfo]:
    """Probe in a child process, one JSON line per device.

    Some PCMs block inside snd_pcm_open even in non-blocking mode (a file plugin
    reading a FIFO, a wedged USB device), and pyalsaaudio holds the GIL there, so
    only a separate process can be abandoned: on a hang we kill it and go on
    with the next device in a fresh child.
    """
    results: list[DeviceInfo] = []
    pending = list(names)
    while pending:
        child = subprocess.Popen(
            [sys.executable, "-m", "voxnode.audio.devices", *pending],
            # Unbuffered bytes: a buffered reader could swallow several lines at once and leave
            # select() waiting on an empty pipe for a line already read.
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            bufsize=0,
        )
        try:
            _read_answers(child, pending, results)
        finally:
            # Done, hung in an open or never ready: killed if still there and always reaped (a child
            # killed and not waited for stayed a zombie until the next Popen), its pipe closed.
            assert child.stdout is not None
            child.stdout.close()
            stop_process(child, 0.0, signal.SIGKILL)
    return results


def _read_answers(child: subprocess.Popen, pending: list[str], results: list[DeviceInfo]) -> None:
    """The child's answers into `results`, its devices taken off `pending`; returns when it has answered
    for all of them, or after the device it gave no answer for within PROBE_TIMEOUT_S (abandoned)."""
    assert child.stdout is not None
    # Start-up (imports) is not part of any device's time limit.
    ready, _, _ = select.select([child.stdout], [], [], 30)
    if not ready or child.stdout.readline().strip() != b"ready":
        raise AudioDeviceError("could not start the device probe (python -m voxnode.audio.devices)")
    while pending:
        ready, _, _ = select.select([child.stdout], [], [], PROBE_TIMEOUT_S)
        line = child.stdout.readline() if ready else b""
        name = pending.pop(0)
        if not line:
            results.append(DeviceInfo(name, "", "", "", None, error=f"no answer within {PROBE_TIMEOUT_S:.0f} s"))
            return
        results.append(DeviceInfo(**json.loads(line)))


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


def format_devices(devices: list[DeviceInfo], probed: bool = True) -> str:
    """One line per device; `probed=False` (--no-probe): the names alone (before, each line read
    "null: rates ; formats ; ?", as if the device had been opened and reported nothing)."""
    if not devices:
        return "no ALSA capture devices found (is the user in the 'audio' group? is a microphone plugged in?)"
    if not probed:
        return "\n".join(d.name for d in devices)
    lines = []
    for d in devices:
        if d.error:
            lines.append(f"{d.name}: cannot open: {d.error}")
            continue
        note = {True: "16 kHz ok", False: 'no 16 kHz: use plug or audio.resample = "alsa"', None: "?"}[d.supports_16k]
        lines.append(f"{d.name}: rates {d.rates}; formats {d.formats}; {note}")
    return "\n".join(lines)


if __name__ == "__main__":
    print("ready", flush=True)
    for device in sys.argv[1:]:
        print(json.dumps(dataclasses.asdict(_probe(device))), flush=True)
