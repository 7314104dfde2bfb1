"""`make test-arm64`'s last part (scripts/test_arm64.py): the end-of-turn model (`vad.end_of_turn`) under
qemu on each CPU model against x86: XNNPACK on every op, the same probabilities."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from scripts.arm64_matrix import CLIPS, POCKETSPHINX
from scripts.arm64_runs import guest_env
from scripts.arm64_sysroot import PY, CpuModel, cpu_root

# The daemon's second model (vad.end_of_turn, stream/turn.py) on two of CLIPS (arm64_matrix), whole and cut
# in half (P(finished) high / low on x86: 0.99 / 0.05 and 0.93 / 0.01). Measured under qemu
# 2026-12-03: every op on XNNPACK on both CPU models, probabilities within 0.004 of x86, 60-75 s
# wall per CPU model (model load and four calls), both side by side.
TURN_CLIPS = CLIPS[1:3]
TURN_MARGIN = 0.05  # largest |P(ARM) - P(x86)|
TURN_TIMEOUT_S = 600
TURN_CHECK = """
import json, sys, wave
import numpy as np
from voxnode.stream.turn import TurnModel
m = TurnModel()
out = {"applied": m.delegation.applied, "ops": m.delegation.ops_total, "left": list(m.delegation.not_delegated)}
for path in sys.argv[1:]:
    with wave.open(path) as w:
        x = np.frombuffer(w.readframes(w.getnframes()), np.int16).astype(np.float32)
    out[path] = [m(x), m(x[: len(x) // 2])]
print(json.dumps(out))
"""


def check_turn_model(qemu: str, sysroot: Path, cpus: list[CpuModel]) -> list[str]:
    """Runs TURN_CHECK on x86 and (side by side) on each CPU model; returns the failures."""
    wavs = [str(POCKETSPHINX / f"{c}.wav") for c in TURN_CLIPS]
    env = guest_env()
    cmd = ["-c", TURN_CHECK, *wavs]
    x86 = subprocess.run([sys.executable, *cmd], capture_output=True, text=True, env=env, timeout=TURN_TIMEOUT_S)
    if x86.returncode != 0:
        return [f"end-of-turn model on x86 exited {x86.returncode}: {x86.stderr.strip().splitlines()[-1:]}"]
    ref = json.loads(x86.stdout.strip().splitlines()[-1])
    procs = {}
    for cpu in cpus:
        root = cpu_root(sysroot, cpu)
        guest = [qemu, "-L", str(root), "-cpu", cpu.name, str(root / "usr" / "bin" / f"python{PY}"), *cmd]
        procs[cpu.name] = subprocess.Popen(guest, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    failures = []
    for name, proc in procs.items():
        try:
            out, err = proc.communicate(timeout=TURN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            failures.append(f"{name}: the end-of-turn model did not finish in {TURN_TIMEOUT_S} s")
            continue
        if proc.returncode != 0:
            failures.append(f"{name}: end-of-turn model exited {proc.returncode}: {err.strip().splitlines()[-1:]}")
            continue
        got = json.loads(out.strip().splitlines()[-1])
        diff = max(abs(a - b) for w in wavs for a, b in zip(got[w], ref[w], strict=True))
        left = "all delegated" if not got["left"] else f"left: {', '.join(got['left'])}"
        print(
            f"end-of-turn model, {name}: XNNPACK {'applied' if got['applied'] else 'NOT applied'} "
            f"({got['ops']} ops, {left}); largest difference from x86 {diff:.4f}"
        )
        if not got["applied"] or got["left"]:
            failures.append(f"{name}: XNNPACK did not take the whole end-of-turn model ({left})")
        if diff > TURN_MARGIN:
            failures.append(f"{name}: end-of-turn probabilities differ from x86 by {diff:.3f} (> {TURN_MARGIN})")
    return failures
