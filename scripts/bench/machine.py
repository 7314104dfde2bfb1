"""What a benchmark ran on, said the same way by every benchmark: the CPU, cores, kernel, Python and
the load while it ran (figures from a shared 2-core machine mean little without the load beside them)."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo ("AMD EPYC 9B14"); on ARM boards, whose cpuinfo has no
    model name, the device-tree model ("Raspberry Pi 4 Model B Rev 1.4"); else the architecture."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("model name", "hardware")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    try:
        return Path("/proc/device-tree/model").read_text().strip("\x00\n ")
    except OSError:
        return platform.processor() or platform.machine()


def describe() -> str:
    """One line: CPU model, logical CPUs, architecture, kernel, Python."""
    return (
        f"{cpu_model()}, {os.cpu_count()} logical CPUs, {platform.machine()}, Linux {platform.release()}, "
        f"Python {platform.python_version()}"
    )


def load() -> str:
    """The load average now, as benchmarks report it beside their figures."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} / {five:.2f} / {fifteen:.2f} (1 / 5 / 15 min)"
