"""`make test-arm64`: `voxnode transcribe` on real clips under qemu-user, as a Raspberry Pi 4
(Cortex-A72) and a Raspberry Pi 5 (Cortex-A76), compared with the same run on this x86 machine,
with Whisper tiny.en and with Whisper base (language "auto", plus a French clip); then the
end-of-turn model (`vad.end_of_turn`) the same way.

What it checks: the aarch64 wheels of our runtime dependencies load and run, XNNPACK takes the
whole of each model on ARM, and the ARM kernels (NEON on the A72, NEON dot-product on the A76) give
transcripts whose WER is within WER_MARGIN of the x86 run (and, for base, detect the languages x86
detected). Tokens are not compared: every correct ARM int8 path differs from x86 by 2-3 % in
encoder output (docs/arm64.md).

The arm64 Python, libraries and wheels come from scripts/arm64_sysroot.py, cached in build/arm64/.

Prints one table per Whisper, a row per CPU, and a last line that says PASS, or FAIL and why; exits 1 on failure.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from scripts import REPO
from scripts.arm64_sysroot import BUILD, PY, CpuModel, Failure, build_sysroot, cpu_root, host_pins, run
from tests.languages import FR_CLIP, FR_PACKAGES, FR_TEXT
from voxnode import text as script
from voxnode.asr.wer import edit_distance, word_errors

POCKETSPHINX = Path("/usr/share/pocketsphinx/test/data")
# Six short real recordings (27 s in all, 76 reference words): four read sentences and two lists of
# cards. Under qemu a CPU model spends about 45 s of CPU loading the model and 11 s per clip.
CLIPS = (
    "librivox/sense_and_sensibility_01_austen_64kb-0870",
    "librivox/sense_and_sensibility_01_austen_64kb-0890",
    "librivox/sense_and_sensibility_01_austen_64kb-0920",
    "librivox/sense_and_sensibility_01_austen_64kb-0930",
    "cards/002",
    "cards/005",
)

# Whisper base runs on these (and FR_CLIP): see ASR_MODELS.
BASE_CLIPS = ("librivox/sense_and_sensibility_01_austen_64kb-0870",)

# WER may be this much worse (absolute, over all clips) on ARM than on x86. On these clips both
# CPU models measured the same WER as x86; one word in 76 is 1.3 %, so 5 % allows three words.
WER_MARGIN = 0.05
# The x86 side is the yardstick; if it is this bad the model or the clips are broken, not ARM.
X86_WER_MAX = 0.15
RUN_TIMEOUT_S = 900  # one CPU model, six clips: 112-134 s of CPU, 650-700 s wall at load 8-10 on 2 cores


@dataclass(frozen=True)
class AsrModel:
    """One Whisper the check runs: `[asr] model` / `language`, on which clips."""

    model: str
    language: str
    clips: tuple[str, ...]  # keys of CLIPS
    french: bool = False  # also FR_CLIP (tests/languages.py), for a multilingual model

    @property
    def model_dir(self) -> Path:
        return REPO / "models" / f"whisper-{self.model}"


ASR_MODELS = (
    AsrModel("tiny.en", "en", CLIPS),
    # Whisper base (634 ops, 73 MB) with language "auto": every clip's language is detected, and ARM must
    # detect the same ones as x86. On two clips only: the longest English one (22 words) and the French
    # prompt (8 words). All seven took 189 s of CPU on the A72 and 98 s on the A76 (2026-12-04), the
    # encoder's 30 s window alone 17 s per clip on the A72, so base on every clip would triple the check.
    AsrModel("base", "auto", BASE_CLIPS, french=True),
)


CPU_MODELS = {
    m.name: m
    for m in (
        CpuModel("cortex-a72", "Raspberry Pi 4", "0xd08", "fp asimd evtstrm crc32 cpuid"),
        CpuModel(
            "cortex-a76",
            "Raspberry Pi 5",
            "0xd0b",
            "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp",
        ),
        CpuModel(
            "neoverse-n1",
            "Graviton2",
            "0xd0c",
            "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp",
        ),
        # No board has it. qemu 7.2's `max` offers SME, XNNPACK then takes its KleidiAI SME kernels and
        # qemu 7.2 emulates them wrongly: garbage text (qemu 10 is right). Kept to show that failure.
        CpuModel("max", "qemu's max", "0xd0c", "fp asimd cpuid"),
    )
}
DEFAULT_CPUS = ("cortex-a72", "cortex-a76")  # Pi 4 and Pi 5, what voxnode's users run

HWCAP_ASIMDDP = 1 << 20  # arch/arm64/include/uapi/asm/hwcap.h
HWCAP2_I8MM = 1 << 13
HWCAP2_SME = 1 << 23


# ---------------------------------------------------------------- the runs


@dataclass(frozen=True)
class Clip:
    wav: Path
    ref: str
    language: str  # of the reference: "en" is normalised as voxnode.asr.wer does, others by voxnode.text


def word_errors_in(language: str, reference: str, hypothesis: str) -> tuple[int, int]:
    """(errors, reference words): English with voxnode.asr.wer's normalisation ("Mr." = "mister"),
    other languages with voxnode.text.words (lower case, no punctuation, accents kept)."""
    if language == "en":
        return word_errors(reference, hypothesis)
    ref = script.words(reference)
    return edit_distance(ref, script.words(hypothesis)), len(ref)


def wer_over(pairs: list[tuple[str, str, str]]) -> float:
    """Errors over all reference words of (language, reference, hypothesis)."""
    totals = [word_errors_in(*t) for t in pairs]
    return sum(e for e, _ in totals) / max(1, sum(n for _, n in totals))


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


def clips(model: AsrModel) -> list[Clip]:
    """The model's clips with their reference transcripts (pocketsphinx-testdata's transcription
    files; FR_TEXT for the French one)."""
    refs = {}
    for listing in ("librivox/transcription", "cards/cards.transcription"):
        path = POCKETSPHINX / listing
        if not path.is_file():
            raise Failure(f"{path} is missing: install pocketsphinx-testdata (make deps-test does)")
        for line in path.read_text().splitlines():
            m = re.match(r"<s>(.*)</s>\s*\((.+)\)", line.strip())
            if m:
                refs[f"{path.parent.name}/{m.group(2).strip()}"] = m.group(1).strip()
    out = [Clip(POCKETSPHINX / f"{c}.wav", refs[c], "en") for c in model.clips]
    if model.french:
        if not FR_CLIP.is_file():
            raise Failure(f"{FR_CLIP} is missing: install {FR_PACKAGES} (make deps-test does)")
        out.append(Clip(FR_CLIP, FR_TEXT, "fr"))
    return out


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


# ---------------------------------------------------------------- the end-of-turn model

# The daemon's second model (vad.end_of_turn, stream/turn.py) on two of the clips above, whole and cut
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


# ---------------------------------------------------------------- report


def xnnpack(engine: dict) -> str:
    total, left = engine.get("ops_total"), engine.get("ops_not_delegated")
    if not engine.get("xnnpack_applied"):
        return "not applied"
    return f"all {total} ops" if left == 0 else f"{left} of {total} ops left"


def report(model: AsrModel, x86: Side, arm: list[Side], pairs: list[Clip], qemu_version: str) -> list[str]:
    """Prints the table; returns the reasons for failure (empty when all is well)."""
    refs = {str(c.wav): c for c in pairs}
    words = sum(word_errors_in(c.language, c.ref, "")[1] for c in pairs)

    def wer_of(side: Side, against: Side | None = None) -> float:
        return wer_over(
            [(c.language, c.ref if against is None else against.texts[f], side.texts[f]) for f, c in refs.items()]
        )

    wer_x86 = wer_of(x86)
    n = len(model.clips)
    french = " and the French prompt" if model.french else ""
    print(
        f"\nWhisper {model.model} (language {model.language!r}), {qemu_version}; {n} clip{'s' * (n > 1)} of "
        f"pocketsphinx-testdata{french}, {words} reference words; WER against the reference transcripts"
    )
    row = "{:<11} {:<15} {:<10} {:<18} {:>6} {:>7} {:>7} {:>7}"
    print(row.format("cpu", "board", "kernels", "XNNPACK", "WER", "vs x86", "CPU", "wall"))
    print(
        row.format(
            x86.label,
            x86.board,
            "-",
            xnnpack(x86.engine),
            f"{wer_x86:.1%}",
            "-",
            f"{x86.cpu_s:.0f} s",
            f"{x86.seconds:.0f} s",
        )
    )
    failures = []
    if model.language == "auto":
        detected = [f"{Path(f).name} {x86.languages[f]}" for f, c in refs.items() if x86.languages[f] != c.language]
        if detected:
            failures.append(f"x86 detected the wrong language with Whisper {model.model}: {', '.join(detected)}")
    if wer_x86 > X86_WER_MAX:
        failures.append(
            f"x86 WER {wer_x86:.1%} is over {X86_WER_MAX:.0%}: the model or the clips are broken, not the ARM build"
        )
    for side in arm:
        wer_arm, vs_x86 = wer_of(side), wer_of(side, x86)
        print(
            row.format(
                side.label,
                side.board,
                side.hwcap,
                xnnpack(side.engine),
                f"{wer_arm:.1%}",
                f"{vs_x86:.1%}",
                f"{side.cpu_s:.0f} s",
                f"{side.seconds:.0f} s",
            )
        )
        if not side.engine.get("xnnpack_applied") or side.engine.get("ops_not_delegated"):
            failures.append(
                f"{side.label}: XNNPACK did not take the whole of Whisper {model.model} ({xnnpack(side.engine)})"
            )
        if wer_arm > wer_x86 + WER_MARGIN:
            worst = max(refs, key=lambda f: word_errors_in(refs[f].language, x86.texts[f], side.texts[f])[0])
            failures.append(
                f"{side.label}: Whisper {model.model}: WER {wer_arm:.1%} is more than {WER_MARGIN:.0%} over x86's "
                f"{wer_x86:.1%}; e.g. {Path(worst).name}: {side.texts[worst]!r} vs x86 {x86.texts[worst]!r}"
            )
        if model.language == "auto":
            wrong = [f for f in refs if side.languages[f] != x86.languages[f]]
            if wrong:
                f = wrong[0]
                failures.append(
                    f"{side.label}: Whisper {model.model} detected another language than x86 on {len(wrong)} "
                    f"clip(s), e.g. {Path(f).name}: {side.languages[f]!r} vs x86 {x86.languages[f]!r}"
                )
    print(
        "kernels: the dot-product/i8mm/SME bits the emulated CPU offers (XNNPACK picks its int8 kernels by them);"
        "\nvs x86: word differences from the x86 transcripts; CPU, wall: of the whole command, model load included;"
        "\nemulated times say nothing about speed on a board"
        + ("; languages: as detected, the same on every side" if model.language == "auto" else "")
    )
    return failures


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
        failures = []
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
        "XNNPACK on every op of every model checked"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
