"""Real failing storage for the spool tests: a small tmpfs (a full disk, a read-only remount) and an
unprivileged user. Each skips with the kernel's own words where it really cannot be had."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


class Tmpfs:
    def __init__(self, path: Path, size_kb: int):
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        if os.geteuid() != 0:
            pytest.skip("mounting a tmpfs needs root (run the suite as root, as CI does)")
        r = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size_kb}k,mode=0777", "tmpfs", str(path)],
            capture_output=True,
            text=True,
        )
        if r.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
        os.chmod(path, 0o777)

    def fill(self) -> Path:
        """Fill the file system to the last byte; returns the filler (delete it to free the space)."""
        filler = self.path / "filler"
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            while True:
                os.write(fd, b"\0" * 4096)
        except OSError:  # ENOSPC: full
            pass
        finally:
            os.close(fd)
        return filler

    def remount(self, mode: str) -> None:
        subprocess.run(["mount", "-o", f"remount,{mode}", str(self.path)], check=True, capture_output=True)

    def umount(self) -> None:
        subprocess.run(["umount", "-l", str(self.path)], capture_output=True)


@pytest.fixture
def tmpfs(tmp_path):
    mounted: list[Tmpfs] = []

    def make(size_kb: int = 512) -> Tmpfs:
        t = Tmpfs(tmp_path / f"tmpfs{len(mounted)}", size_kb)
        mounted.append(t)
        return t

    yield make
    for t in mounted:
        t.umount()


def unprivileged_python() -> tuple[list[str], dict]:
    """A command prefix running Python as user nobody with this checkout importable, and its env additions.

    The venv's interpreter may live under /root (pyenv), which nobody cannot enter; Debian's python3 of
    the same minor version then runs the venv's packages (pure Python and cp311 wheels).
    """
    if os.geteuid() != 0:
        pytest.skip("dropping to an unprivileged user needs root")
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not installed")
    try:
        pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("there is no user nobody")
    drop = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    site = next(p for p in sys.path if p.endswith("site-packages") and p.startswith(sys.prefix))
    probe = "import voxnode, paho, numpy; print('ok')"
    env = {**os.environ, "PYTHONMALLOC": "malloc", "PYTHONDONTWRITEBYTECODE": "1", "HOME": "/tmp"}
    for python, extra in (
        (sys.executable, {}),
        (
            f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}",
            {"PYTHONPATH": f"{ROOT}:{ROOT / 'daemon'}:{site}"},
        ),
    ):
        r = subprocess.run([*drop, python, "-c", probe], capture_output=True, text=True, cwd=ROOT, env={**env, **extra})
        if r.returncode == 0 and r.stdout.strip() == "ok":
            return [*drop, python], extra
    pytest.skip(f"no Python that user nobody can run with this checkout: {r.stderr.strip()[-200:]}")
