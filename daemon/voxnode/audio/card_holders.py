"""Which programs hold a sound card's capture, from the kernel's own account of it.

A capture device another program has open answers voxnode's non-blocking open with EBUSY ("Device or
resource busy"): on a Raspberry Pi most often a desktop's PipeWire, a wyoming-satellite or arecord left
running, or a second voxnode. ALSA's proc files say who: every open substream's
/proc/asound/cardN/pcmDc/subS/status has an `owner_pid` line (its state "closed" otherwise), and
/proc/PID/comm names the program. Read only when an open failed with EBUSY. Under voxnode.service,
ProtectKernelTunables leaves /proc/asound readable and ProtectProc=invisible hides other users' processes:
the line then gives the pid alone ("pid 812 on card Device device 0"; `ps -p 812` names it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


@dataclass(frozen=True)
class Holder:
    card: str  # the card's id (/proc/asound/cardN/id), e.g. "Device"; its number where it has none
    device: int
    pid: int
    program: str  # /proc/PID/comm; "" where the process is gone or not ours to read
    index: int = -1  # the card's number (/proc/asound/cardN)

    def on(self, card: str) -> bool:
        """This capture is on `card`, an ALSA card's id or number as a PCM name gives it."""
        return card == self.card or card == str(self.index)

    def __str__(self) -> str:
        who = f"{self.program} (pid {self.pid})" if self.program else f"pid {self.pid}"
        return f"{who} on card {self.card} device {self.device}"


def capture_holders(proc: Path = PROC) -> list[Holder]:
    """Every open capture substream's owner, in card and device order; [] where there is no ALSA in the
    kernel (no /proc/asound) or nothing is open."""
    holders = []
    for status in sorted((proc / "asound").glob("card[0-9]*/pcm[0-9]*c/sub[0-9]*/status")):
        pid = _owner(status)
        if pid is None:
            continue
        card_dir = status.parent.parent.parent
        index = int(card_dir.name.removeprefix("card"))
        card = _read(card_dir / "id") or str(index)
        device = int(status.parent.parent.name[3:-1])  # "pcm0c"
        holders.append(Holder(card, device, pid, _read(proc / str(pid) / "comm"), index))
    return holders


# The card of a hardware PCM name: hw:1, hw:1,0, plughw:Device, or a CARD= argument (hw:CARD=Device,DEV=0,
# dsnoop:CARD=Device, sysdefault:CARD=1); quotes as alsa-lib allows them.
_CARD_ARG = re.compile(r"""(?:^|[:,])CARD=["']?([^,"']+)""")
_HW = re.compile(r"""^(?:plug)?hw:["']?([^,"':=]+)["']?(?:,|$)""")


def card_named(device: str) -> str | None:
    """The card (its id or number) that the PCM name `device` opens, where the name says it; None for
    "default" or a PCM defined in a configuration file, whose card only alsa-lib's configuration knows."""
    m = _CARD_ARG.search(device) or _HW.match(device)
    return m.group(1) if m else None


def _owner(status: Path) -> int | None:
    for line in _read(status).splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "owner_pid":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace").strip()
    except OSError:
        return ""
