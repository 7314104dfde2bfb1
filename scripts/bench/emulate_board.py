#!/usr/bin/env python3
"""Run a command as if on a slower ARM board: the cgroup v1 cpu controller caps every thread of it.

    scripts/bench/emulate_board.py BOARD [--period-us N] [--poll-ms N] [-v] -- COMMAND...
    scripts/bench/emulate_board.py --list

A benchmark tool, not a test (docs/benchmarks.md, "Emulated boards"). Needs root and a writable
cgroup v1 cpu hierarchy (/sys/fs/cgroup/cpu). What it does:

- a parent group capping the command's total CPU at cores x fraction of one core of this host
  (a 4-core board never uses more than its 4 cores' worth);
- every thread of the command's process tree in a group of its own, capped at `fraction` of one
  host core (one board core). Threads appear later than the process: /proc/PID/task and the
  descendant processes are polled every --poll-ms and each new TID is moved into its own group
  through `tasks`. A new thread starts in its creator's group until it is moved (capped at one
  board core meanwhile, never faster);
- the groups are removed at exit, also on SIGINT/SIGTERM/SIGHUP (forwarded to the child, which
  runs in a process group of its own); the exit status is the child's.

`x86` runs the command unthrottled (no cgroup needed). Other tools use `argv_prefix(board)`
(`from scripts.bench import emulate_board`); it imports nothing of the checkout, so it also runs as a file.

The fractions come from scripts/bench/calibrate_boards.py (scripts/bench/results/board_calibration.json)
on a 2-core AMD EPYC (Zen 5, KVM) with AVX-512 VNNI; on another host, calibrate again (`make calibrate-boards`)
and give every tool that host's fractions through EMULATE_BOARD_FRACTIONS (e.g. "pi4=0.09,pi5=0.26").
It cannot model memory bandwidth, caches, NEON vs AVX-512 kernels or thermal throttling.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import resource
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

CGROUP_CPU = Path("/sys/fs/cgroup/cpu")
MIN_QUOTA_US = 1000  # cgroup v1 refuses a smaller cpu.cfs_quota_us
DEFAULT_PERIOD_US = 5000  # short periods keep the stalls small; lengthened where the quota would be < 1000 us


@dataclass(frozen=True)
class Board:
    cores: int
    fraction: float | None  # of one core of the calibration host per board core; None = no limit
    what: str


# One table for every script. Each fraction = time of a workload here / time on the board, chosen
# by scripts/bench/calibrate_boards.py on the calibration host (2-core AMD EPYC Zen 5 under KVM, AVX-512
# VNNI, load < 0.5); the measurements are in scripts/bench/results/board_calibration.json.
BOARDS: dict[str, Board] = {
    # Raspberry Pi 4 / 400: 4x Cortex-A72. Modelled at 1.8 GHz (Pi 400 and the later Pi 4 boards;
    # the first Pi 4 revisions run at 1.5 GHz, ~17 % slower): the published figures used for the
    # calibration (fquirin's Pi 400, ncnn's "BCM2711B0 1.8GHz") are at 1.8 GHz.
    # At 0.072: faster-whisper JFK 3.74 s (Pi 400 3.9), ncnn 1 thread mobilenet 0.098 (0.124),
    # mobilenet_v2 0.057 (0.093, short: +-25 % between runs), resnet50 0.585 (0.534), 4 threads 0.258 (0.263).
    "pi4": Board(4, 0.072, "Raspberry Pi 4/400, 4x Cortex-A72 1.8 GHz"),
    # Raspberry Pi 5: 4x Cortex-A76 2.4 GHz (Orange Pi 5 / RK3588 has the same core and clock).
    # Fitted on faster-whisper JFK: 1.35-1.51 s (Orange Pi 5 1.3). ncnn's Pi 5 fp32 figures are 1.6-2.9x
    # faster than this predicts (fp16 arithmetic on the ARMv8.2 A76): not fitted, see docs/benchmarks.md.
    "pi5": Board(4, 0.19, "Raspberry Pi 5, 4x Cortex-A76 2.4 GHz"),
    # Raspberry Pi Zero 2 W: 4x Cortex-A53 1 GHz (512 MB RAM, not modelled). ncnn only (no published
    # CTranslate2 figure found: Whisper on it is extrapolated). At 0.023: mobilenet 0.436 s (0.394),
    # mobilenet_v2 0.261 (0.274), resnet50 2.22 (1.80), 4 threads 0.730 (0.783).
    "zero2w": Board(4, 0.023, "Raspberry Pi Zero 2 W, 4x Cortex-A53 1.0 GHz"),
    "x86": Board(os.cpu_count() or 1, None, "this host, no limit"),
}
CALIBRATED_FRACTIONS = {name: b.fraction for name, b in BOARDS.items()}

# Another host needs other fractions: stop 38's 2-vCPU Intel Xeon (Firecracker, AVX-512 VNNI + AMX) ran the
# unthrottled JFK workload in 0.42 s (calibration host 0.57) but the throttled Pi 4 one in 5.5 s at 0.072 (3.7 there),
# and ncnn fp32 1-thread 1.7x slower than the calibration host. `make calibrate-boards` prints the fractions
# that fit this host; put them here for every tool at once, e.g. EMULATE_BOARD_FRACTIONS="pi4=0.1,pi5=0.3".
FRACTIONS_ENV = "EMULATE_BOARD_FRACTIONS"


class EmulationError(Exception):
    """One line for the user: why the board cannot be emulated here."""


def host_fractions(spec: str) -> dict[str, float]:
    """`pi4=0.1,pi5=0.3` -> {"pi4": 0.1, "pi5": 0.3}; a one-line EmulationError naming the variable if bad."""
    out: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        name, _, value = item.partition("=")
        name = name.strip()
        if name not in BOARDS or BOARDS[name].fraction is None:
            emulated = ", ".join(n for n, b in BOARDS.items() if b.fraction is not None)
            raise EmulationError(f"{FRACTIONS_ENV}: unknown board {name!r} in {item!r} (known: {emulated})")
        try:
            fraction = float(value)
        except ValueError:
            fraction = math.nan
        if not 0 < fraction <= 1:
            raise EmulationError(f"{FRACTIONS_ENV}: {item!r}: the fraction must be a number in (0, 1]")
        out[name] = fraction
    return out


def apply_host_fractions(spec: str | None) -> None:
    """Replace the calibrated fractions with this host's (the environment variable), in BOARDS for every user."""
    for name, fraction in host_fractions(spec or "").items():
        BOARDS[name] = Board(BOARDS[name].cores, fraction, BOARDS[name].what)


def host_fraction_error() -> str | None:
    """Applies the environment's fractions (once, at import); the one-line reason if they are bad."""
    try:
        apply_host_fractions(os.environ.get(FRACTIONS_ENV))
    except EmulationError as exc:
        return str(exc)
    return None


HOST_FRACTION_ERROR = host_fraction_error()  # raised by argv_prefix() and run(), where errors are handled


def board_period_us(fraction: float, period_us: int = DEFAULT_PERIOD_US) -> int:
    """The period to use: the one asked for, longer where fraction x period < the 1000 us minimum quota."""
    need = math.ceil(MIN_QUOTA_US / fraction / 100) * 100
    return max(period_us, need)


def quota_us(fraction: float, period_us: int) -> int:
    return max(MIN_QUOTA_US, round(fraction * period_us))


def own_cpu_cgroup() -> Path:
    """This process's group in the cpu hierarchy (a container may sit below the root)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            if "cpu" in controllers.split(","):
                return CGROUP_CPU / path.lstrip("/")
    return CGROUP_CPU


def unavailable_reason() -> str | None:
    """None when the cpu controller can be used here, else why not (one line)."""
    base = own_cpu_cgroup()
    if not (base / "cpu.cfs_quota_us").exists():
        return f"no cgroup v1 cpu controller at {base} (needs cpu.cfs_period_us / cpu.cfs_quota_us)"
    if not os.access(base, os.W_OK) or not os.access(base / "tasks", os.W_OK):
        return f"{base} is not writable (run as root on a host whose cgroup v1 cpu controller is writable)"
    probe = base / f"voxnode-probe-{os.getpid()}"
    try:
        probe.mkdir()
    except OSError as exc:
        return f"cannot create a group under {base}: {exc.strerror}"
    with contextlib.suppress(OSError):
        probe.rmdir()
    return None


def argv_prefix(board: str, period_us: int | None = None) -> list[str]:
    """The argv to put before a command to run it as `board` (raises EmulationError if it can't)."""
    if board not in BOARDS:
        raise EmulationError(f"unknown board {board!r} (known: {', '.join(BOARDS)})")
    if HOST_FRACTION_ERROR:
        raise EmulationError(HOST_FRACTION_ERROR)
    prefix = [sys.executable, str(Path(__file__).resolve()), board]
    if period_us is not None:
        prefix += ["--period-us", str(period_us)]
    return [*prefix, "--"]


def _write(path: Path, value: int | str) -> None:
    with open(path, "w") as f:
        f.write(f"{value}\n")


class Emulation:
    """The groups of one run: parent (total cap), spawn (where the child starts), one per thread."""

    def __init__(self, board: Board, period_us: int, verbose: bool = False) -> None:
        assert board.fraction is not None
        self.board = board
        self.period = board_period_us(board.fraction, period_us)
        self.per_thread = quota_us(board.fraction, self.period)
        self.verbose = verbose
        self.root = own_cpu_cgroup()
        self.parent = self.root / f"voxnode-emu-{os.getpid()}"
        self.placed: dict[int, Path] = {}  # tid -> its group
        self.seen_pids: set[int] = set()

    def _group(self, path: Path, quota: int) -> Path:
        path.mkdir()
        _write(path / "cpu.cfs_period_us", self.period)
        _write(path / "cpu.cfs_quota_us", quota)
        return path

    def setup(self) -> None:
        total = max(MIN_QUOTA_US, round(self.board.cores * self.board.fraction * self.period))  # type: ignore[operator]
        try:
            self._group(self.parent, total)
            self.spawn = self._group(self.parent / "spawn", self.per_thread)
        except OSError as exc:
            self.cleanup()
            raise EmulationError(f"cannot set up the cpu groups under {self.root}: {exc.strerror}") from None
        if self.verbose:
            print(
                f"emulate_board: period {self.period} us, {self.per_thread} us per thread, "
                f"{total} us in all ({self.parent})",
                file=sys.stderr,
            )

    def preexec(self) -> None:
        """In the child before exec: into the spawn group, so not one instruction runs unthrottled."""
        _write(self.spawn / "tasks", os.getpid())

    def _tree(self, top: int) -> list[int]:
        """top and its descendant processes (scanning /proc: no /proc/PID/task/TID/children here)."""
        children: dict[int, list[int]] = {}
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                stat = Path(entry.path, "stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry.name))
        out, todo = [], [top]
        while todo:
            pid = todo.pop()
            out.append(pid)
            todo.extend(children.get(pid, ()))
        return out

    def place_new_threads(self, top: int, scan_tree: bool) -> None:
        pids = self._tree(top) if scan_tree else [top, *self.seen_pids]
        self.seen_pids.update(pids)
        for pid in pids:
            try:
                tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
            except OSError:
                self.seen_pids.discard(pid)
                continue
            for tid in tids:
                if tid in self.placed:
                    continue
                group = self.parent / f"t{tid}"
                try:
                    self._group(group, self.per_thread)
                    _write(group / "tasks", tid)
                except OSError:  # the thread ended meanwhile
                    with contextlib.suppress(OSError):
                        group.rmdir()
                    continue
                self.placed[tid] = group

    def reap(self) -> None:
        """Remove the groups of threads that ended (a daemon's thread churn would pile them up)."""
        for tid, group in list(self.placed.items()):
            if not os.path.exists(f"/proc/{tid}"):
                with contextlib.suppress(OSError):
                    group.rmdir()
                    del self.placed[tid]

    def cleanup(self) -> None:
        if not self.parent.exists():
            return
        groups = [p for p in self.parent.iterdir() if p.is_dir()]
        for group in [*groups, self.parent]:
            # Tasks left (a detached grandchild) go back to where we started, unthrottled.
            with contextlib.suppress(OSError):
                for tid in (group / "tasks").read_text().split():
                    with contextlib.suppress(OSError):
                        _write(self.root / "tasks", tid)
        for group in [*groups, self.parent]:
            for _ in range(50):
                try:
                    group.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)


def run(board_name: str, command: list[str], period_us: int, poll_ms: float, verbose: bool) -> int:
    if HOST_FRACTION_ERROR:
        raise EmulationError(HOST_FRACTION_ERROR)
    board = BOARDS[board_name]
    if board.fraction is None:
        os.execvp(command[0], command)
    reason = unavailable_reason()
    if reason:
        raise EmulationError(reason)
    emu = Emulation(board, period_us, verbose)
    forwarded: list[int] = []
    child: subprocess.Popen[bytes] | None = None

    def forward(signum: int, _frame: object) -> None:
        forwarded.append(signum)
        if child is not None and child.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                child.send_signal(signum)

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, forward)
    emu.setup()
    try:
        try:
            child = subprocess.Popen(command, preexec_fn=emu.preexec, process_group=0)
        except OSError as exc:
            raise EmulationError(f"cannot run {command[0]}: {exc.strerror}") from None
        if forwarded:  # a signal came while it was starting
            child.send_signal(forwarded[-1])
        poll_s = poll_ms / 1000
        n = 0
        while child.poll() is None:
            # The whole tree every 10th round (~50 ms): /proc scans cost; known processes every round.
            emu.place_new_threads(child.pid, scan_tree=n % 10 == 0)
            if n % 200 == 199:
                emu.reap()
            n += 1
            time.sleep(poll_s)
        status = child.returncode
        # What the command used (its tree, reaped), apart from this poller's own CPU (~10 % of a
        # host core at a 5 ms poll), and the peak RSS of its largest process (ru_maxrss, KiB on
        # Linux): benchmarks read this line (bench/live_noise.py).
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        mine = resource.getrusage(resource.RUSAGE_SELF)
        print(
            f"emulate_board: command CPU {used.ru_utime + used.ru_stime:.3f} s, "
            f"emulator CPU {mine.ru_utime + mine.ru_stime:.3f} s, "
            f"command peak RSS {used.ru_maxrss / 1024:.0f} MB",
            file=sys.stderr,
            flush=True,
        )
    finally:
        if child is not None and child.poll() is None:
            child.kill()
            child.wait()
        emu.cleanup()
    if status < 0:  # killed by a signal: die the same way
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
        return 128 - status
    return status


def main(argv: list[str] | None = None) -> int:
    args_in = sys.argv[1:] if argv is None else argv
    if "--" in args_in:
        cut = args_in.index("--")
        own, command = args_in[:cut], args_in[cut + 1 :]
    else:
        own, command = args_in, []
    ap = argparse.ArgumentParser(
        prog="emulate_board.py", description=__doc__.split("\n\n")[0], usage="%(prog)s BOARD [options] -- COMMAND..."
    )
    ap.add_argument("board", nargs="?", help=", ".join(BOARDS))
    ap.add_argument(
        "--period-us",
        type=int,
        default=DEFAULT_PERIOD_US,
        help="CFS period (lengthened where the quota would be < 1000 us)",
    )
    ap.add_argument("--poll-ms", type=float, default=5.0, help="how often new threads are looked for")
    ap.add_argument("--list", action="store_true", help="print the boards and exit")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(own)
    if args.list:
        for name, b in BOARDS.items():
            if b.fraction is None:
                print(f"{name:7} {b.what}")
            else:
                period = board_period_us(b.fraction, args.period_us)
                own = "" if b.fraction == CALIBRATED_FRACTIONS[name] else f" (from {FRACTIONS_ENV})"
                print(
                    f"{name:7} {b.cores} cores x {b.fraction:.3f} of a host core{own} "
                    f"(period {period} us, quota {quota_us(b.fraction, period)} us)  {b.what}"
                )
        return 0
    try:
        if args.board not in BOARDS:
            raise EmulationError(f"unknown board {args.board!r} (known: {', '.join(BOARDS)})")
        if not command:
            raise EmulationError("no command: emulate_board.py BOARD -- COMMAND...")
        if not 1000 <= args.period_us <= 1_000_000:
            raise EmulationError("--period-us must be between 1000 and 1000000")
        return run(args.board, command, args.period_us, args.poll_ms, args.verbose)
    except EmulationError as exc:
        print(f"emulate_board: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
