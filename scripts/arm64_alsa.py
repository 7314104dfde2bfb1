"""`make test-arm64`'s ALSA part (scripts/test_arm64.py): alsa-lib's own words through audio/alsa_pcm.py's
ctypes callback on aarch64, against x86.

The daemon takes alsa-lib's complaints for the opening thread (snd_lib_error_set_local) and formats each
with libc's vsnprintf from the va_list alsa-lib hands over. That va_list is an array on x86-64 and a
structure passed by reference on aarch64, so the same Python works on both only if ctypes passes it on
as alsa-lib and libc expect: checked here with Debian's arm64 alsa-lib and libc under qemu (one CPU
model: the calling convention is the architecture's, not the core's). A PCM that does not exist ("%s")
and a configuration that does not load ("%d" line and column, then the file's name) must give the very
lines x86 gives, on our message, and nothing on stderr.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from scripts.arm64_runs import guest_env
from scripts.arm64_sysroot import PY, CpuModel, cpu_root

ALSA_TIMEOUT_S = 120
ALSA_CHECK = """
import sys
from voxnode.audio.alsa_pcm import CapturePcm, PcmError
try:
    CapturePcm(sys.argv[1], 1, 16000, 320, 4)
except PcmError as e:
    print(e)
"""
MISSING = "vx_arm64_gone"
BROKEN_CONFIG = 'pcm.mic {\n type file\n slave.pcm "null"\n'  # no closing brace


def check_alsa_words(qemu: str, sysroot: Path, cpu: CpuModel) -> list[str]:
    """ALSA_CHECK on x86 and under qemu, a missing PCM and a broken configuration; returns the failures."""
    failures = []
    root = cpu_root(sysroot, cpu)
    guest_python = [qemu, "-L", str(root), "-cpu", cpu.name, str(root / "usr" / "bin" / f"python{PY}")]
    with tempfile.TemporaryDirectory() as tmp:
        broken = Path(tmp) / "asound.conf"
        broken.write_text(BROKEN_CONFIG)
        for what, device, extra in (
            ("a missing PCM", MISSING, {}),
            ("a configuration that does not load", "default", {"ALSA_CONFIG_PATH": str(broken)}),
        ):
            env = {**guest_env(), **extra}
            said = {}
            for side, python in (("x86", [sys.executable]), (cpu.name, guest_python)):
                p = subprocess.run(
                    [*python, "-c", ALSA_CHECK, device], capture_output=True, text=True, env=env, timeout=ALSA_TIMEOUT_S
                )
                said[side] = (p.returncode, p.stdout.strip(), p.stderr.strip())
            print(f"alsa-lib's words, {cpu.name}, {what}: {said[cpu.name][1]}")
            x86, arm = said["x86"], said[cpu.name]
            if "(ALSA: " not in x86[1]:
                failures.append(f"x86: {what}: alsa-lib's words are not on the error ({x86})")
            # The guest may say more than x86: qemu shows it the host's /etc/alsa/conf.d where the sysroot
            # has none, whose plugins (pulse) the sysroot lacks. What x86 says must be there, word for word.
            elif arm[0] != 0 or arm[2] or not _words(x86[1]) <= _words(arm[1]) or _head(arm[1]) != _head(x86[1]):
                failures.append(f"{cpu.name}: {what}: {arm} where x86 says {x86}")
    return failures


def _head(message: str) -> str:
    return message.split(" (ALSA: ")[0]


def _words(message: str) -> set[str]:
    return set(message.split(" (ALSA: ", 1)[-1].removesuffix(")").split("; "))
