"""`voxnode devices`: which capture PCMs exist and what each can do."""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import select
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import alsaaudio

from voxnode.audio.alsa_open import supported_rates
from voxnode.audio.alsa_pcm import alsa_says, alsa_words
from voxnode.audio.format import SAMPLE_RATE
from voxnode.audio.pcm_route import open_hint, sound_server
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
    server: str = ""  # the sound server the name goes through ("PipeWire"), from audio/pcm_route.py


PROBE_TIMEOUT_S = 5.0
LIST_TIMEOUT_S = 30.0  # the listing opens no device; 30 s is the probe child's start-up allowance too

_T = TypeVar("_T")


def list_capture_devices(probe: bool = True) -> list[DeviceInfo]:
    """The capture PCMs ALSA lists, probed unless `probe` is False. None listed is an AudioDeviceError
    that says why in ALSA's words: a configuration that does not load (a syntax error in a file of
    ALSA_CONFIG_PATH or an asoundrc), or 'default' that cannot open (before, both were "no ALSA capture
    devices found (is the user in the 'audio' group? ...)", which asked about the wrong thing)."""
    names, said = _list_in_child()
    if not names:
        raise AudioDeviceError(_why_none(said))
    if not probe:
        return [DeviceInfo(n, "", "", "", None) for n in names]
    return _probe_in_child(names)


def _list_in_child() -> tuple[list[str], list[str]]:
    """(names, what alsa-lib said while listing them, in its words: _alsa_said), from a child, as the
    probes."""
    try:
        child = subprocess.run(
            [sys.executable, "-m", "voxnode.audio.devices", "--list"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            timeout=LIST_TIMEOUT_S,
            check=False,
        )
        answer = json.loads(child.stdout.decode(errors="replace").splitlines()[-1])
    except (subprocess.TimeoutExpired, IndexError, ValueError):
        raise AudioDeviceError("could not list the ALSA devices (python -m voxnode.audio.devices --list)") from None
    return answer["names"], answer["alsa"]


def _why_none(said: list[str]) -> str:
    where = f" (ALSA_CONFIG_PATH={os.environ['ALSA_CONFIG_PATH']})" if os.environ.get("ALSA_CONFIG_PATH") else ""
    if said:
        return f"ALSA lists no capture device: its configuration does not load{where}: {'; '.join(said)}"
    default = _probe_in_child(["default"])[0]
    if default.error:
        return f"ALSA lists no capture device and 'default' cannot open{where}: {default.error}"
    return f"ALSA lists no capture device{where}, though 'default' opens: name it with --device default"


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


def _alsa_said(call: Callable[[], _T]) -> tuple[_T | None, BaseException | None, list[str]]:
    """(what `call` returned or None, what it raised or None, what alsa-lib said meanwhile in its own
    words: audio/alsa_pcm.alsa_says, which takes them off stderr)."""
    result: _T | None = None
    raised: BaseException | None = None
    with alsa_says() as said:
        try:
            result = call()
        except Exception as e:
            raised = e
    return result, raised, said


def _probe(name: str) -> DeviceInfo:
    # Non-blocking so a device held by another program does not hang the listing.
    opened, raised, said = _alsa_said(
        lambda: alsaaudio.PCM(type=alsaaudio.PCM_CAPTURE, mode=alsaaudio.PCM_NONBLOCK, device=name)
    )
    if opened is None:
        # pyalsaaudio says "No such file or directory [mic]" for a PCM whose slave is missing; ALSA's
        # own line says which ("Unknown PCM nosuch").
        error = str(raised) + alsa_words(said)
        if "Permission denied" in error:
            error += " (is the user in the 'audio' group?)"
        # pyalsaaudio's error carries no errno: its words are strerror's
        error += open_hint(name, -errno.EBUSY if os.strerror(errno.EBUSY) in error else 0, error)
        return DeviceInfo(name, "", "", "", None, error=error)
    pcm = opened
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
        server = sound_server(name)
        return DeviceInfo(name, pcm.cardname(), rates, formats, ok, server=server[0] if server else "")
    finally:
        pcm.close()


def format_devices(devices: list[DeviceInfo], probed: bool = True) -> str:
    """One line per device; `probed=False` (--no-probe): the names alone (before, each line read
    "null: rates ; formats ; ?", as if the device had been opened and reported nothing)."""
    if not probed:
        return "\n".join(d.name for d in devices)
    lines = []
    for d in devices:
        if d.error:
            lines.append(f"{d.name}: cannot open: {d.error}")
            continue
        note = {True: "16 kHz ok", False: 'no 16 kHz: use plug or audio.resample = "alsa"', None: "?"}[d.supports_16k]
        if d.server:  # it opens here, in a desktop session; voxnode.service will not reach the server
            note += f"; through {d.server}, a desktop session's sound server that voxnode.service cannot reach"
        lines.append(f"{d.name}: rates {d.rates}; formats {d.formats}; {note}")
    return "\n".join(lines)


if __name__ == "__main__" and sys.argv[1:] == ["--list"]:
    names, failed, said = _alsa_said(lambda: list(alsaaudio.pcms(alsaaudio.PCM_CAPTURE)))
    print(json.dumps({"names": names or [], "alsa": said + ([str(failed)] if failed else [])}), flush=True)
elif __name__ == "__main__":
    print("ready", flush=True)
    for device in sys.argv[1:]:
        print(json.dumps(dataclasses.asdict(_probe(device))), flush=True)
