"""SoC temperature and throttling, where the board exposes them. `root` lets tests use a fake /sys."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

# Raspberry Pi get_throttled bits (vcgencmd docs): current state in the low bits, "has occurred" in 16+.
THROTTLE_BITS = {
    0: "under_voltage",
    1: "freq_capped",
    2: "throttled",
    3: "soft_temp_limit",
    16: "under_voltage_occurred",
    17: "freq_capped_occurred",
    18: "throttled_occurred",
    19: "soft_temp_limit_occurred",
}


class Thermal:
    def __init__(self, root: str | Path = "/") -> None:
        self.root = Path(root)
        self._zones = sorted((self.root / "sys/class/thermal").glob("thermal_zone*"))
        self._throttle_file = self.root / "sys/devices/platform/soc/soc:firmware/get_throttled"
        self._vcgencmd = shutil.which("vcgencmd") if str(root) == "/" else None

    def temperatures(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for zone in self._zones:
            try:
                milli = int((zone / "temp").read_text().strip())
            except (OSError, ValueError):
                continue
            try:
                kind = (zone / "type").read_text().strip() or zone.name
            except OSError:
                kind = zone.name
            name = kind if kind not in out else f"{kind}_{zone.name}"
            out[name] = round(milli / 1000.0, 1)
        return out

    def throttled(self) -> dict | None:
        raw = self._read_throttled()
        if raw is None:
            return None
        return {"raw": hex(raw), **{name: bool(raw & (1 << bit)) for bit, name in THROTTLE_BITS.items()}}

    def _read_throttled(self) -> int | None:
        try:
            return int(self._throttle_file.read_text().strip(), 16)
        except (OSError, ValueError):
            pass
        if self._vcgencmd:
            try:
                out = subprocess.run(
                    [self._vcgencmd, "get_throttled"], capture_output=True, text=True, timeout=2
                ).stdout
                return int(out.strip().split("=")[1], 16)  # "throttled=0x50000"
            except (OSError, subprocess.SubprocessError, IndexError, ValueError):
                return None
        return None

    def report(self) -> dict:
        temps = self.temperatures()
        return {
            "soc_temp_c": max(temps.values()) if temps else None,
            "zones_c": temps,
            "throttled": self.throttled(),
        }
