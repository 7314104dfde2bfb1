"""What scripts/bench/eval_vad.py measures of a VAD: its decisions per frame and their cost, precision and
recall, where its first and last decision of each clip fall, false triggers through the segmenter, CPU
fed in real time and the memory its front-ends add (each in a fresh process)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import numpy as np

from scripts.bench import audio_corpus as ac
from scripts.bench.eval_vad_candidates import CANDIDATES, Candidate
from voxnode.stream.segmenter import Chunk, Ended, Segmenter, SegmenterParams
from voxnode.stream.worker import IDLE_BATCH


def boundary_lags(
    pred: np.ndarray, clean: np.ndarray, spans: list[tuple[int, int]]
) -> tuple[list[int], list[int], int]:
    """Per clip, in frames: first speech decision minus the start of the clip's speech, and last
    speech decision minus its end. The clip's speech is its frames within 20 dB of its loudest
    (breath and room tone of the recordings lie below noise at these SNRs). Decisions are looked
    for from 200 ms before the clip to 200 ms before the next one; clips with none are missed."""
    levels = ac.frame_levels_db(clean)
    onset, end, missed = [], [], 0
    for k, (a, b) in enumerate(spans):
        loud = np.flatnonzero(levels[a:b] > levels[a:b].max() - 20) + a
        lo = max(0, a - 10)
        hi = (spans[k + 1][0] if k + 1 < len(spans) else len(pred)) - 10
        hits = np.flatnonzero(pred[lo:hi]) + lo
        if len(hits) == 0:
            missed += 1
            continue
        onset.append(int(hits[0] - loud[0]))
        end.append(int(hits[-1] - loud[-1]))
    return onset, end, missed


def run_frames(cand: Candidate, x: np.ndarray) -> tuple[np.ndarray, float]:
    fe = cand.frontend()
    n = len(x) // ac.FRAME
    out = np.zeros(n, dtype=bool)
    t0 = time.process_time()
    for i in range(n):
        out[i] = fe.process(x[i * ac.FRAME : (i + 1) * ac.FRAME]).speech
    return out, (time.process_time() - t0) / n * 1e3


def paced_cpu(cand: Candidate, x: np.ndarray, seconds: float) -> float:
    """% of one core, frames fed in real time IDLE_BATCH at a time (the daemon's idle batching)."""
    fe = cand.frontend()
    b = IDLE_BATCH
    n = int(seconds / 0.02) // b * b
    frames = [x[(i % (len(x) // ac.FRAME)) * ac.FRAME :][: ac.FRAME] for i in range(n)]
    c0, w0 = time.process_time(), time.monotonic()
    for k in range(0, n, b):
        for f in frames[k : k + b]:
            fe.process(f)
        delay = w0 + (k + b) * 0.02 - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    return 100 * (time.process_time() - c0) / (time.monotonic() - w0)


def count_triggers(cand: Candidate, x: np.ndarray, seg: SegmenterParams) -> int:
    fe = cand.frontend()
    s = Segmenter(seg)
    triggers = 0
    for i in range(len(x) // ac.FRAME):
        o = fe.process(x[i * ac.FRAME : (i + 1) * ac.FRAME])
        for ev in s.push(Chunk(o.samples, i, i * 0.02, i * 0.02, o.speech, o.level_db)):
            triggers += isinstance(ev, Ended)
    triggers += sum(isinstance(ev, Ended) for ev in s.flush())
    return triggers


def prf(pred: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    tp = float(np.sum(pred & truth))
    p = tp / max(1.0, float(np.sum(pred)))
    r = tp / max(1.0, float(np.sum(truth)))
    return p, r


def f1(p: float, r: float) -> float:
    return 2 * p * r / max(1e-9, p + r)


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
    return 0.0


def rss_child(name: str) -> None:
    """In a fresh process that has loaded the Whisper engine, as the daemon has (so LiteRT and
    XNNPACK are already paid for): RSS added by the front-ends of 1 and of 4 streams."""
    from voxnode.asr import default_model_dir
    from voxnode.asr.whisper.engine import WhisperEngine

    engine = WhisperEngine.load(default_model_dir(), 1)
    frame = np.zeros(ac.FRAME, dtype=np.float32)
    base = _rss_mb()
    fes = []
    for k in range(4):
        fes.append(CANDIDATES[name].frontend())
        for _ in range(3):  # at least one model call
            fes[-1].process(frame)
        if k == 0:
            one = _rss_mb()
    print(json.dumps({"one": one - base, "four": _rss_mb() - base}))
    engine.close()


def rss_table(names: list[str]) -> dict[str, dict]:
    out = {}
    for name in names:
        r = subprocess.run(
            [sys.executable, "-m", "scripts.bench.eval_vad", "--rss-child", name], capture_output=True, text=True
        )
        lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
        out[name] = json.loads(lines[-1]) if r.returncode == 0 and lines else {"error": r.stderr.strip()[-200:]}
    return out
