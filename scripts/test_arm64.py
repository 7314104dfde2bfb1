"""`make test-arm64`: `voxnode transcribe` on real clips under qemu-user, as a Raspberry Pi 4
(Cortex-A72) and a Raspberry Pi 5 (Cortex-A76), compared with the same run on this x86 machine,
with Whisper tiny.en and with Whisper base (language "auto", plus a French clip); then the
end-of-turn model (`vad.end_of_turn`) the same way, and alsa-lib's own words on the daemon's
capture errors (scripts/arm64_alsa.py).

What it checks: the aarch64 wheels of our runtime dependencies load and run, XNNPACK takes the
whole of each model on ARM, and the ARM kernels (NEON on the A72, NEON dot-product on the A76) give
transcripts whose WER is within WER_MARGIN of the x86 run (and, for base, detect the languages x86
detected). Tokens are not compared: every correct ARM int8 path differs from x86 by 2-3 % in
encoder output (docs/arm64.md).

The arm64 Python, libraries and wheels come from scripts/arm64_sysroot.py, cached in build/arm64/.

Prints one table per Whisper, a row per CPU, and a last line that says PASS, or FAIL and why; exits 1 on failure.
"""

# Its parts: arm64_matrix (the Whispers, clips and CPU models), arm64_sysroot (the arm64 Python and
# wheels), arm64_runs (the runs under qemu), arm64_report (WER and the verdict), arm64_turn (the
# end-of-turn model), arm64_alsa (alsa-lib's words through the capture's ctypes callback).

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys

from scripts.arm64_alsa import check_alsa_words
from scripts.arm64_matrix import ASR_MODELS, CPU_MODELS, DEFAULT_CPUS
from scripts.arm64_report import report
from scripts.arm64_runs import hwcaps, run_all
from scripts.arm64_sysroot import Failure, build_sysroot, cpu_root, host_pins, run
from scripts.arm64_turn import TURN_MARGIN, check_turn_model


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--cpu",
        action="append",
        choices=list(CPU_MODELS),
        metavar="MODEL",
        help=f"qemu CPU model to run (repeatable; default {' and '.join(DEFAULT_CPUS)}; "
        f"also {', '.join(c for c in CPU_MODELS if c not in DEFAULT_CPUS)})",
    )
    ap.add_argument(
        "--model",
        action="append",
        choices=[m.model for m in ASR_MODELS],
        help="Whisper to check (repeatable; default all: " + ", ".join(m.model for m in ASR_MODELS) + ")",
    )
    ap.add_argument(
        "--no-end-of-turn",
        action="store_true",
        help="leave out the end-of-turn model (`make test`, so CI, checks Whisper tiny.en only; docs/arm64.md)",
    )
    args = ap.parse_args()
    cpus = [CPU_MODELS[c] for c in (args.cpu or DEFAULT_CPUS)]
    models = [m for m in ASR_MODELS if not args.model or m.model in args.model]
    try:
        qemu = shutil.which("qemu-aarch64")
        if qemu is None:
            raise Failure("qemu-aarch64 not found: install Debian's qemu-user (make test-arm64 does)")
        qemu_version = run([qemu, "--version"], "qemu-aarch64 --version").stdout.splitlines()[0]
        sysroot = build_sysroot(host_pins())
        roots = {cpu.name: cpu_root(sysroot, cpu) for cpu in cpus}
        caps = {cpu.name: hwcaps(qemu, roots[cpu.name], cpu) for cpu in cpus}
        failures = check_alsa_words(qemu, sysroot, cpus[0])
        for model in models:
            x86, arm, pairs = run_all(qemu, roots, caps, cpus, model)
            failures += report(model, x86, arm, pairs, qemu_version)
        if not args.no_end_of_turn:
            failures += check_turn_model(qemu, sysroot, cpus)
    except Failure as e:
        failures = [str(e)]
    except subprocess.TimeoutExpired as e:
        failures = [f"{' '.join(map(str, e.cmd[:3]))} ... did not finish in {e.timeout:.0f} s"]
    if failures:
        for f in failures:
            print(f"test-arm64: FAIL: {f}")
        return 1
    names = " and ".join(c.name for c in cpus)
    whispers = " and ".join(f"Whisper {m.model}" for m in models)
    languages = " (base: the same languages)" if any(m.language == "auto" for m in models) else ""
    turn = "" if args.no_end_of_turn else f", the end-of-turn model within {TURN_MARGIN} of x86's probabilities"
    print(
        f"test-arm64: PASS: {names} transcribe with {whispers} within the WER margin of x86{languages}{turn}, "
        "XNNPACK on every op of every model checked, alsa-lib's words as on x86"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
