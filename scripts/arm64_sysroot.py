"""The arm64 sysroot that `make test-arm64` runs `voxnode transcribe` in (scripts/test_arm64.py).

Fetched into build/arm64/ (ignored by git) and kept there; it is rebuilt only when the package
list or the versions installed in .venv change:
- the arm64 Debian 12 packages of Python 3.11 and the C libraries it needs, with apt-get run on
  a private state folder (the host's dpkg database and apt lists are not touched), unpacked with
  dpkg-deb -x;
- the aarch64 wheels of ai-edge-litert, numpy and soxr at the versions installed in .venv;
- one root per qemu CPU model: symlinks to the sysroot plus its own /proc/cpuinfo.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BUILD = REPO / "build" / "arm64"
PY = "3.11"  # Debian 12's python3.11; the wheels are fetched for the same version
DEBS = (
    "python3.11-minimal libpython3.11-minimal libpython3.11-stdlib libc6 libgcc-s1 libstdc++6 "
    "libexpat1 zlib1g libssl3 libffi8 libbz2-1.0 liblzma5 libcrypt1 libuuid1 "
    "libasound2 libasound2-data"  # the capture's alsa-lib (scripts/arm64_alsa.py)
).split()
WHEELS = ("ai-edge-litert", "numpy", "soxr")  # all `voxnode transcribe` imports besides the stdlib
# pip does not widen an explicit manylinux_2_X platform to older glibcs: list every one the
# sysroot's glibc (2.36) can load. ai-edge-litert ships manylinux_2_27 only.
PLATFORMS = ["manylinux2014_aarch64"] + [f"manylinux_2_{v}_aarch64" for v in range(17, 37)]


@dataclass(frozen=True)
class CpuModel:
    name: str  # qemu -cpu
    board: str
    part: str  # MIDR part number in /proc/cpuinfo
    features: str  # the board's /proc/cpuinfo Features line


class Failure(Exception):
    """One line saying what went wrong."""


def run(cmd: list[str], what: str, **kw) -> subprocess.CompletedProcess:
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        tail = (p.stderr.strip() or p.stdout.strip()).splitlines()[-1:] or ["no output"]
        raise Failure(f"{what} failed (exit {p.returncode}): {tail[0]}")
    return p


def apt_options(state: Path) -> list[str]:
    """apt-get on a private state folder with arm64 as its only architecture: the host's sources
    and keyrings are used, its package lists and dpkg database are neither read nor written."""
    return [
        "-o",
        f"Dir::State::Lists={state / 'lists'}",
        "-o",
        f"Dir::State::status={state / 'status'}",
        "-o",
        f"Dir::Cache={state / 'cache'}",
        "-o",
        "APT::Architecture=arm64",
        "-o",
        "APT::Architectures::=arm64",
        "-o",
        "Debug::NoLocking=1",
        "-o",
        "APT::Sandbox::User=root",
        "-qq",
    ]


def fetch_debs(debs_dir: Path) -> list[Path]:
    state = BUILD / "apt"
    for d in (state / "lists" / "partial", state / "cache" / "archives" / "partial"):
        d.mkdir(parents=True, exist_ok=True)
    (state / "status").touch()
    opts = apt_options(state)
    run(["apt-get", *opts, "update"], "apt-get update (arm64 package lists)")
    if debs_dir.exists():
        shutil.rmtree(debs_dir)
    debs_dir.mkdir(parents=True)
    run(["apt-get", *opts, "download", *DEBS], "apt-get download of the arm64 packages", cwd=debs_dir)
    return sorted(debs_dir.glob("*.deb"))


def host_pins() -> list[str]:
    """name==version of everything in this interpreter's environment, used as pip constraints so
    the arm64 side runs the versions the x86 side runs."""
    out = run([sys.executable, "-m", "pip", "freeze", "--exclude-editable"], "pip freeze").stdout
    return sorted(line for line in out.splitlines() if "==" in line and not line.startswith("#"))


def build_sysroot(pins: list[str]) -> Path:
    """Debian's arm64 python3.11 and libraries, and the aarch64 wheels in its dist-packages."""
    sysroot = BUILD / "sysroot"
    wanted = hashlib.sha256("\n".join(DEBS + ["--"] + pins + ["--"] + PLATFORMS).encode()).hexdigest()
    stamp = sysroot / ".stamp"
    if stamp.is_file() and stamp.read_text() == wanted:
        return sysroot
    print("test-arm64: fetching the arm64 Python, libraries and wheels into build/arm64/ (once)", flush=True)
    fresh = BUILD / "sysroot.new"
    if fresh.exists():
        shutil.rmtree(fresh)
    fresh.mkdir(parents=True)
    for deb in fetch_debs(BUILD / "debs"):
        run(["dpkg-deb", "-x", str(deb), str(fresh)], f"dpkg-deb -x {deb.name}")

    wheels = BUILD / "wheels"
    wheels.mkdir(exist_ok=True)
    constraints = BUILD / "constraints.txt"
    constraints.write_text("\n".join(pins) + "\n")
    target = fresh / "usr" / "local" / "lib" / f"python{PY}" / "dist-packages"
    platform = [a for p in PLATFORMS for a in ("--platform", p)]
    common = [
        "--only-binary=:all:",
        "--python-version",
        PY,
        "--implementation",
        "cp",
        *platform,
        "-c",
        str(constraints),
        *WHEELS,
    ]
    run([sys.executable, "-m", "pip", "download", "-q", "-d", str(wheels), *common], "pip download of aarch64 wheels")
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-index",
            "--find-links",
            str(wheels),
            "--no-compile",
            "--target",
            str(target),
            *common,
        ],
        "pip install --target of the aarch64 wheels",
    )
    if sys.version_info[:2] == tuple(int(x) for x in PY.split(".")):
        # Byte-code is the same on every CPU. Compiled here, the guest's imports take 2.8 s of CPU
        # instead of 6.7 s on a fresh sysroot (a CI machine starts with one), per CPU model.
        subprocess.run(
            [
                sys.executable,
                "-m",
                "compileall",
                "-q",
                "-j",
                "0",
                str(fresh / "usr" / "lib" / f"python{PY}"),
                str(target),
            ],
            capture_output=True,
        )
    if sysroot.exists():
        shutil.rmtree(sysroot)
    fresh.rename(sysroot)
    stamp.write_text(wanted)
    return sysroot


def cpu_root(sysroot: Path, cpu: CpuModel) -> Path:
    """A root for `qemu-aarch64 -L`: the shared sysroot plus a /proc/cpuinfo of this CPU.

    qemu-user 7.2 shows the guest the host's x86 /proc/cpuinfo, and the CPU detection inside
    LiteRT segfaults on it when the Interpreter is created. With -L, qemu looks absolute paths up
    in the root first, so root/proc/cpuinfo is what the guest reads.
    """
    root = BUILD / f"root-{cpu.name}"
    (root / "proc").mkdir(parents=True, exist_ok=True)
    for entry in sysroot.iterdir():
        if entry.name.startswith("."):
            continue
        link = root / entry.name
        if not link.is_symlink():
            link.symlink_to(Path("..") / sysroot.name / entry.name)
    blocks = [
        f"processor\t: {i}\nBogoMIPS\t: 108.00\nFeatures\t: {cpu.features}\nCPU implementer\t: 0x41\n"
        f"CPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: {cpu.part}\nCPU revision\t: 1\n"
        for i in range(possible_cpus())
    ]
    (root / "proc" / "cpuinfo").write_text("\n".join(blocks))
    return root


def possible_cpus() -> int:
    # The guest reads /sys/devices/system/cpu/possible from the host: cpuinfo must list as many.
    try:
        text = Path("/sys/devices/system/cpu/possible").read_text().strip()
        return max(int(part.split("-")[-1]) for part in text.split(",")) + 1
    except (OSError, ValueError):
        return os.cpu_count() or 1
