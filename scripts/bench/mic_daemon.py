"""A real `voxnode run --stdout` with one microphone and the Wyoming server on, for the probes and the
test that measure what Wyoming clients do to a microphone's finals (issue 27, docs/reliability.md):
scripts/bench/probe_wyoming_fairness.py, scripts/bench/probe_wyoming_abuse.py and
tests/stream/test_wyoming_fairness_alsa.py.

The microphone is an ALSA `type file` PCM reading a FIFO fed in real time (live_fifo.py); speech is
real recorded speech. Finals are read from the daemon's stdout as they come; end of speech is when
the utterance's last period was written to the FIFO, so end of speech -> final is what a user sees.
RSS is sampled from /proc/<pid>/status. The probes and the tests import it as scripts.bench.mic_daemon."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import numpy as np

from scripts.bench.live_fifo import LiveFifo, asoundrc
from scripts.bench.wyoming_client import Exchange, transcribe
from voxnode.asr.wer import corpus_wer, wer
from voxnode.process_stop import stop_process


def load() -> list[float]:
    """The 1, 5 and 15 min load averages (the machine is shared: every latency figure carries them)."""
    return [round(x, 2) for x in os.getloadavg()]


def trim(audio: np.ndarray) -> np.ndarray:
    """Cut leading/trailing quiet (20 ms frames under -40 dBFS) so the clip's end is the speech end."""
    f = 320
    n = len(audio) // f
    rms = np.sqrt(np.mean((audio[: n * f].astype(np.float64) / 32768.0).reshape(n, f) ** 2, axis=1) + 1e-12)
    loud = np.nonzero(20 * np.log10(rms) > -40)[0]
    return audio[max(0, loud[0] - 5) * f : (loud[-1] + 1) * f]


def proc_rss_mb(pid: int) -> dict[str, float]:
    """VmRSS (now) and VmHWM (peak since start) of a process, MB."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = round(int(value.split()[0]) / 1024, 1)
    return out


def proc_cpu_s(pid: int) -> float:
    """User + system CPU seconds a process has used (load-independent, unlike its latency)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class MicDaemon:
    """`voxnode run --stdout`, its microphone `mic` on a FIFO, Wyoming on a free loopback port.

    `wyoming` adds keys to the [wyoming] section (the shipped defaults otherwise); `extra_toml` is put
    before it. Use as a context manager, or call stop()."""

    def __init__(self, folder: Path, *, python: str = sys.executable, extra_toml: str = "", **wyoming):
        from voxnode.mqtt.localbroker import free_port

        (folder / "alsa").mkdir()
        self.mic = LiveFifo(folder / "mic.fifo")
        (folder / "alsa" / "asoundrc").write_text(asoundrc({"mic": self.mic.path}))
        self.port = free_port()
        settings = {"enabled": "true", "host": '"127.0.0.1"', "port": self.port, **wyoming}
        self.config = folder / "config.toml"
        self.config.write_text(
            extra_toml + '[audio]\ndevice = "mic"\n[wyoming]\n' + "".join(f"{k} = {v}\n" for k, v in settings.items())
        )
        self.log_path = folder / "daemon.log"
        self._log = open(self.log_path, "w")  # noqa: SIM115 (closed in stop)
        env = {**os.environ, "XDG_CONFIG_HOME": str(folder), "PYTHONMALLOC": "malloc"}
        self.proc = subprocess.Popen(
            [python, "-m", "voxnode", "run", "--config", str(self.config), "--stdout"],
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=env,
            text=True,
        )
        self.finals: list[tuple[float, dict]] = []  # (time.time() at arrival, the final event)
        threading.Thread(target=self._read, daemon=True).start()
        deadline = time.monotonic() + 90
        while "speech-to-text server on" not in self.log():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the daemon did not start:\n" + self.log()[-3000:])
            time.sleep(0.1)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("type") == "final":
                self.finals.append((time.time(), event))

    def log(self) -> str:
        return self.log_path.read_text()

    def rss_mb(self) -> dict[str, float]:
        return proc_rss_mb(self.proc.pid)

    def cpu_s(self) -> float:
        return proc_cpu_s(self.proc.pid)

    def say(self, audio: np.ndarray, timeout: float = 60) -> float:
        """Speak int16-scale audio into the microphone in real time; returns time.time() at its end."""
        if not self.mic.say(audio.astype("<i2").tobytes()).wait(timeout):
            raise TimeoutError("the microphone's FIFO was not read")
        return time.time()

    def wait_finals(self, n: int, timeout: float, quiet_s: float = 3.0) -> None:
        """Until `n` finals have come and then none for `quiet_s` (a split one would show), or `timeout`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.finals) >= n and time.time() - self.finals[-1][0] > quiet_s:
                return
            time.sleep(0.1)

    def stop(self, timeout: float = 60) -> int:
        """SIGTERM, `timeout` seconds to finish, then SIGKILL: its exit code (-SIGKILL if killed), reaped."""
        try:
            return stop_process(self.proc, timeout)
        finally:
            self.mic.stop()
            self._log.close()

    def __enter__(self) -> MicDaemon:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()  # an ended daemon is only reaped; its microphone and log are closed either way


class RssSampler:
    """Samples a process's VmRSS every `interval_s` on a thread; stats() gives peak, p95, p50 (MB)."""

    def __init__(self, pid: int, interval_s: float = 0.5):
        self.pid, self.interval_s = pid, interval_s
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)

    def start(self) -> RssSampler:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.samples.append(proc_rss_mb(self.pid)["VmRSS"])
            except (OSError, KeyError):
                return  # the process has ended
            self._stop.wait(self.interval_s)

    def stop(self) -> dict:
        self._stop.set()
        self._thread.join(5)
        s = self.samples
        return {
            "samples": len(s),
            "interval_s": self.interval_s,
            "first_mb": s[0] if s else None,
            "p50_mb": round(float(np.percentile(s, 50)), 1) if s else None,
            "p95_mb": round(float(np.percentile(s, 95)), 1) if s else None,
            "peak_mb": max(s) if s else None,
            "last_mb": s[-1] if s else None,
        }


class Speaker:
    """Speaks (text, int16 audio) clips into a MicDaemon's microphone on a thread, `gap_s` of silence
    between them, in order and round again, until stop() or `rounds` times through the list.
    `spoken` holds (time.time() at the end of speech, clip index)."""

    def __init__(self, daemon: MicDaemon, clips: list[tuple[str, np.ndarray]], gap_s: float, rounds: int = 0):
        self.daemon, self.clips, self.gap_s, self.rounds = daemon, clips, gap_s, rounds
        self.spoken: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="speaker", daemon=True)

    def start(self) -> Speaker:
        self._thread.start()
        return self

    def _run(self) -> None:
        i = 0
        while not self._stop.is_set() and (not self.rounds or i < self.rounds * len(self.clips)):
            self.spoken.append((self.daemon.say(self.clips[i % len(self.clips)][1]), i % len(self.clips)))
            i += 1
            self._stop.wait(self.gap_s)

    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)


def match_finals(
    spoken: list[tuple[float, int]], clips: list[tuple[str, np.ndarray]], finals: list[tuple[float, dict]], t0: float
) -> list[dict]:
    """Pair each final with the utterance whose end of speech is nearest the final's `end` (within 2 s):
    end of speech -> arrival on stdout, the daemon's own latency, the text and its WER."""
    out, used = [], set()
    for arrived, e in finals:
        fend = datetime.fromisoformat(e["end"]).timestamp()
        j = min(range(len(spoken)), key=lambda j: abs(spoken[j][0] - fend)) if spoken else None
        if j is None or abs(spoken[j][0] - fend) > 2.0 or j in used:
            continue
        used.add(j)
        end, clip = spoken[j]
        out.append(
            {
                "utt": j,
                "t": round(end - t0, 1),
                "latency_s": round(arrived - end, 3),
                "daemon_latency_ms": e.get("latency_ms"),
                "text": e["text"],
                "reference": clips[clip][0],
                "wer": round(wer(clips[clip][0], e["text"]), 3),
            }
        )
    return out


def finals_summary(spoken: list, clips: list[tuple[str, np.ndarray]], finals: list, matched: list[dict]) -> dict:
    """Counts, WER over every utterance spoken (one with no final counts as all its words deleted;
    a second final for one utterance is not in it, `finals` > `matched` shows it) and latency."""
    ls = [m["latency_s"] for m in matched]
    heard = {m["utt"]: m["text"] for m in matched}
    pairs = [(clips[clip][0], heard.get(j, "")) for j, (_, clip) in enumerate(spoken)]

    def pct(q: float) -> float | None:
        return round(float(np.percentile(ls, q)), 3) if ls else None

    return {
        "utterances": len(spoken),
        "finals": len(finals),
        "matched": len(matched),
        "missing": len(spoken) - len(matched),
        "wer": round(corpus_wer(pairs), 4) if pairs else None,
        "latency_p50_s": pct(50),
        "latency_p95_s": pct(95),
        "latency_max_s": round(max(ls), 3) if ls else None,
    }


async def back_to_back(
    port: int,
    data: bytes,
    until: Callable[[], bool],
    on_answer: Callable[[Exchange, float], None],
    *,
    max_requests: int | None = None,
    timeout: float = 600,
) -> None:
    """One client sending requests back to back (wyoming's own client, a new connection each, one
    burst each) until `until()` or `max_requests`; `on_answer(exchange, time.time() at its start)`."""
    n = 0
    while not until() and (max_requests is None or n < max_requests):
        started = time.time()
        on_answer(await transcribe(port, data, timeout=timeout), started)
        n += 1
