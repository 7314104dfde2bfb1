"""The unit's riskier restrictions, checked against the real code with the same kernel mechanisms:

- RestrictAddressFamilies= without AF_NETLINK: a seccomp filter (what systemd installs) refuses
  socket(AF_NETLINK); name resolution, TCP connects and ALSA capture must still work.
- MemoryDenyWriteExecute=yes: prctl(PR_SET_MDWE) (what systemd >= 254 uses; 252 uses seccomp)
  refuses writable+executable memory; the daemon and LiteRT with XNNPACK must still work.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.alsa_env import ROOT

HERE = Path(__file__).parent

NETWORK_AND_ALSA = """
import socket, alsaaudio
try:
    socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
    print("netlink allowed")
except OSError as e:
    print("netlink refused", e.errno)
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(); port = srv.getsockname()[1]
for flags in (0, socket.AI_ADDRCONFIG):
    assert socket.getaddrinfo("localhost", port, type=socket.SOCK_STREAM, flags=flags)
socket.create_connection(("localhost", port), 2).close()  # what paho-mqtt does
pcm = alsaaudio.PCM(alsaaudio.PCM_CAPTURE, device="vx_file", channels=1, rate=16000,
                    format=alsaaudio.PCM_FORMAT_S16_LE, periodsize=320, periods=4)
n, data = pcm.read()
print("ok", n)
"""

MDWE = """
import ctypes, mmap, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(65, 1, 0, 0, 0) != 0:  # PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN
    print("no MDWE", ctypes.get_errno()); sys.exit(0)
try:
    mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    sys.exit("W+X mapping was allowed: the guard is not on")
except OSError:
    pass
from voxnode.cli import main
assert main(["run", "--device", "vx_file", "--duration", "0.5"]) == 0
# A device that is not there: alsa-lib's complaint comes through its ctypes callback (audio/alsa_pcm.py).
assert main(["run", "--device", "vx_gone", "--duration", "0.3"]) == 0
model = sys.argv[1]
if model:
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter
    it = Interpreter(model_path=model, num_threads=1)  # XNNPACK delegate by default
    it.allocate_tensors()
    for d in it.get_input_details():
        it.set_tensor(d["index"], np.zeros(d["shape"], dtype=d["dtype"]))
    it.invoke()
    print("litert ok")
    # The wake-word detector: its model on XNNPACK and the compiled micro front-end.
    from voxnode.wake.detector import WakeDetector
    from voxnode.wake.models import load_wake_model
    d = WakeDetector(load_wake_model("okay_nabu"))
    assert d.process(np.zeros(3200, dtype=np.int16)) is None
    print("wake ok")
print("ok")
"""


def _env():
    return {**os.environ, "PYTHONMALLOC": "malloc", "PYTHONPATH": str(ROOT / "daemon")}


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is needed to build the seccomp helper")
def test_no_netlink_needed(tmp_path, alsa_dir):
    helper = tmp_path / "nonetlink"
    subprocess.run(["gcc", "-O", "-o", str(helper), str(HERE / "native" / "nonetlink.c")], check=True, timeout=60)
    (alsa_dir / "in.raw").write_bytes(b"\0" * 6400)
    p = subprocess.run(
        [str(helper), sys.executable, "-c", NETWORK_AND_ALSA], env=_env(), capture_output=True, text=True, timeout=30
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["netlink", "refused", "97", "ok", "320"]  # 97 = EAFNOSUPPORT


def test_no_writable_executable_memory_needed(alsa_dir):
    (alsa_dir / "in.raw").write_bytes(b"\0" * 64000)
    model = ROOT / "models" / "whisper-tiny.en" / "encoder.int8.tflite"
    p = subprocess.run(
        [sys.executable, "-c", MDWE, str(model) if model.exists() else ""],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    if p.stdout.startswith("no MDWE"):
        pytest.skip("this kernel has no PR_SET_MDWE (Linux < 6.3)")
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.strip().endswith("ok")
    assert "(ALSA: Unknown PCM vx_gone)" in p.stderr and "ALSA lib" not in p.stderr, p.stderr[-3000:]
    assert ("litert ok" in p.stdout) == model.exists()
    assert ("wake ok" in p.stdout) == model.exists()
