"""`make test-arm64`'s runs (scripts/test_arm64.py): `voxnode transcribe --json` on x86, then under
qemu-aarch64 on each CPU model side by side, with each child's own CPU time; the transcripts, detected
languages and XNNPACK coverage parsed from its output; the kernels the emulated CPU offers."""

from __future__ import annotations

import ast
import contextlib
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from scripts import REPO
from scripts.arm64_matrix import AsrModel, Clip, clips
from scripts.arm64_sysroot import BUILD, PY, CpuModel, Failure

RUN_TIMEOUT_S = 900  # one CPU model, six clips: 112-134 s of CPU, 650-700 s wall at load 8-10 on 2 cores

HWCAP_ASIMDDP = 1 << 20  # arch/arm64/include/uapi/asm/hwcap.h
HWCAP2_I8MM = 1 << 13
HWCAP2_SME = 1 << 23


@dataclass
class Side:
    label: str
    board: str
    texts: dict[str, str]
    engine: dict
    languages: dict[str, str | None]
    seconds: float = 0.0  # wall
    cpu_s: float = 0.0
    hwcap: str = "-"


def write_config(model: AsrModel) -> Path:
    # One interpreter thread on both sides: the two CPU models run side by side on CI's 2 cores,
    # and two threads on the A72 gave the same tokens as one. The model is the checkout's own.
    if not (model.model_dir / "model_config.json").is_file():
        raise Failure(f"{model.model_dir} has no model_config.json: the checkout lacks Whisper {model.model}")
    config = BUILD / f"transcribe-{model.model}.toml"
    config.write_text(
        f'[asr]\nmodel = "{model.model}"\nmodel_dir = "{model.model_dir}"\nlanguage = "{model.language}"\n'
        'num_threads = 1\n\n[log]\nlevel = "info"\n'
    )
    return config


def transcribe_cmd(config: Path, wavs: list[Path]) -> list[str]:
    return ["-m", "voxnode", "transcribe", "--config", str(config), "--json", *map(str, wavs)]


def guest_env() -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTHON", "VIRTUAL_ENV", "LD_")) and k not in ("INVOCATION_ID", "JOURNAL_STREAM")
    }
    return {**env, "PYTHONPATH": str(REPO / "daemon"), "PYTHONMALLOC": "malloc"}


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def wait_with_usage(procs: dict[str, subprocess.Popen], deadline: float) -> dict[str, tuple[int | None, float, float]]:
    """Per name: (exit code, or None when killed at the deadline; wall s; CPU s). os.wait4 gives
    each child's own CPU time, which unlike wall time means something on a busy machine."""
    started = time.monotonic()
    results: dict[str, tuple[int | None, float, float]] = {}
    while len(results) < len(procs):
        late = time.monotonic() > deadline
        for name, proc in procs.items():
            if name in results:
                continue
            if late:
                proc.kill()
            pid, status, usage = os.wait4(proc.pid, 0 if late else os.WNOHANG)
            if pid:
                proc.returncode = os.waitstatus_to_exitcode(status)
                code = None if late else proc.returncode
                results[name] = (code, time.monotonic() - started, usage.ru_utime + usage.ru_stime)
        time.sleep(0.2)
    return results


def parse(label: str, board: str, p: subprocess.CompletedProcess | None, wavs: list[Path]) -> Side:
    if p is None:
        raise Failure(f"{label}: voxnode transcribe did not finish in {RUN_TIMEOUT_S} s")
    if p.returncode != 0:
        tail = p.stderr.strip().splitlines()[-1:] or [
            f"no output (signal {-p.returncode})" if p.returncode < 0 else "no output"
        ]
        raise Failure(f"{label}: voxnode transcribe exited {p.returncode}: {tail[0]}")
    texts, languages = {}, {}
    for line in p.stdout.splitlines():
        obj = json.loads(line)
        texts[obj["file"]] = obj["text"]
        languages[obj["file"]] = obj.get("language")
    missing = [w.name for w in wavs if str(w) not in texts]
    if missing:
        raise Failure(f"{label}: no transcript for {', '.join(missing)}")
    # The engine logs its info once loaded: "speech model loaded: {...}" (voxnode/asr/whisper/engine.py).
    m = re.search(r"speech model loaded: (\{.*\})", p.stderr)
    if not m:
        raise Failure(f"{label}: no 'speech model loaded' line on stderr, cannot tell whether XNNPACK was applied")
    return Side(label, board, texts, ast.literal_eval(m.group(1)), languages)


def hwcaps(qemu: str, root: Path, cpu: CpuModel) -> str:
    """The dot-product / i8mm / SME bits the emulated CPU offers: XNNPACK picks its kernels from them."""
    p = subprocess.run(
        [qemu, "-L", str(root), "-cpu", cpu.name, str(root / "usr" / "bin" / f"python{PY}"), "-S", "-c", "pass"],
        env={**guest_env(), "LD_SHOW_AUXV": "1"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    caps = dict(re.findall(r"^(AT_HWCAP2?):\s+([0-9a-fx]+)", p.stdout, re.M))
    if "AT_HWCAP" not in caps:
        return "?"
    hw, hw2 = int(caps["AT_HWCAP"], 16), int(caps.get("AT_HWCAP2", "0"), 16)
    names = [
        n for n, on in (("dotprod", hw & HWCAP_ASIMDDP), ("i8mm", hw2 & HWCAP2_I8MM), ("SME", hw2 & HWCAP2_SME)) if on
    ]
    return "+".join(names) or "NEON only"


def run_all(
    qemu: str, roots: dict[str, Path], caps: dict[str, str], cpus: list[CpuModel], model: AsrModel
) -> tuple[Side, list[Side], list[Clip]]:
    pairs = clips(model)
    wavs = [c.wav for c in pairs]
    config = write_config(model)
    env = guest_env()

    # The CPU models run side by side (one core each); x86 runs first, alone, in seconds.
    cpu0 = children_cpu_s()
    t0 = time.monotonic()
    p = subprocess.run(
        [sys.executable, *transcribe_cmd(config, wavs)], capture_output=True, text=True, env=env, timeout=RUN_TIMEOUT_S
    )
    x86 = parse("x86_64", "this machine", p, wavs)
    x86.seconds, x86.cpu_s = time.monotonic() - t0, children_cpu_s() - cpu0

    arm = []
    with tempfile.TemporaryDirectory(prefix=f"voxnode-arm64-{model.model}-") as tmp, contextlib.ExitStack() as stack:
        procs, files = {}, {}
        for cpu in cpus:
            root = roots[cpu.name]
            files[cpu.name] = out, err = (
                stack.enter_context(open(Path(tmp) / f"{cpu.name}.out", "w+")),
                stack.enter_context(open(Path(tmp) / f"{cpu.name}.err", "w+")),
            )
            cmd = [
                qemu,
                "-L",
                str(root),
                "-cpu",
                cpu.name,
                str(root / "usr" / "bin" / f"python{PY}"),
                *transcribe_cmd(config, wavs),
            ]
            procs[cpu.name] = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, text=True)
        finished = wait_with_usage(procs, time.monotonic() + RUN_TIMEOUT_S)
        for cpu in cpus:
            code, wall, cpu_s = finished[cpu.name]
            out, err = files[cpu.name]
            out.seek(0)
            err.seek(0)
            done = (
                None
                if code is None
                else subprocess.CompletedProcess(procs[cpu.name].args, code, out.read(), err.read())
            )
            out.close()
            err.close()
            side = parse(cpu.name, cpu.board, done, wavs)
            side.seconds, side.cpu_s, side.hwcap = wall, cpu_s, caps[cpu.name]
            arm.append(side)
    return x86, arm, pairs
