"""openWakeWord's alexa model on voxnode's runtime, checked and timed (issue 24).

The pipeline is daemon/voxnode/wake/openwakeword.py (`wake.confirm = "openwakeword"`):

    .venv-bench/bin/python -m scripts.bench.wake_oww --check ../shared/data/wake/alexa/{0,2,126,320,198}.wav
    .venv-bench/bin/python -m scripts.bench.wake_oww --cpu 60

--check compares its probabilities with pyopen-wakeword's own (its bundled TFLite library, chunk by
chunk) and reports what XNNPACK took; --cpu is the process CPU time of running it as a stream.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from voxnode.wake.openwakeword import (
    AUTOFILL_CHUNKS,
    CHUNK,
    EMB_WINDOW,
    HEAD_WINDOW,
    MEL_SAMPLES,
    MELS_PER_CHUNK,
    PAD_CHUNKS,
    OwwScorer,
    models_dir,
)


def check(files: list[Path]) -> int:
    """Our pipeline against pyopen-wakeword's own (its bundled TFLite library) on a few recordings."""
    import wave

    from pyopen_wakeword.const import Model
    from pyopen_wakeword.openwakeword import OpenWakeWord, OpenWakeWordFeatures

    ours = OwwScorer()
    for name, d in ours.delegation.items():
        print(f"{name}: XNNPACK applied={d.applied}, {d.ops_total} ops, left: {', '.join(d.not_delegated) or 'none'}")
    worst = 0.0
    for f in files:
        with wave.open(str(f)) as w:
            pcm = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16)
        pcm = np.concatenate([pcm, np.zeros(CHUNK * 20, np.int16)])  # let the last windows complete
        feats = OpenWakeWordFeatures.from_builtin()
        head = OpenWakeWord.from_builtin(Model.ALEXA)
        theirs: list[tuple[int, float]] = []
        for j in range(len(pcm) // CHUNK):
            for emb in feats.process_streaming(pcm[j * CHUNK : (j + 1) * CHUNK].tobytes()):
                for prob in head.process_streaming(emb):
                    theirs.append((4 * j + 3, prob))
        full, _ = ours.probabilities(pcm[: len(pcm) // CHUNK * CHUNK], AUTOFILL_CHUNKS)
        p, at = ours.probabilities(pcm[: len(pcm) // CHUNK * CHUNK])
        their_p = np.array([x for _, x in theirs])[-len(p) :]
        their_at = np.array([a for a, _ in theirs])[-len(p) :]
        diff = float(np.abs(their_p - p).max())
        worst = max(worst, diff)
        print(
            f"{f.name}: {len(p)} probabilities, peak ours {p.max():.4f} theirs {their_p.max():.4f}, "
            f"max |diff| {diff:.2e}; 8 s autofill vs {PAD_CHUNKS}-chunk pad max |diff| "
            f"{float(np.abs(full[-len(p) :] - p).max()):.2e}; frames agree: {bool(np.all(their_at == at))}"
        )
    print(f"worst max |diff| {worst:.2e}")
    return 0


def stream_cpu(seconds: float) -> dict:
    """Process CPU time of openWakeWord run as a stream, one 80 ms chunk at a time (mel window, one
    embedding, one head call per chunk), over `seconds` of a real recording looped under pink noise,
    and of scoring a 2.5 s ring buffer at once (what a confirm on demand costs per trigger)."""
    import resource

    from scripts.bench.wake_audio import default_recordings, recordings

    ours = OwwScorer()
    emb1 = ours._open(models_dir() / "embedding_model.tflite", "embedding", None, True)  # one window per call
    x = np.concatenate([r.audio for r in recordings(default_recordings(), "alexa")[:8]])
    x = np.resize(x, int(seconds * 16000)) + np.random.default_rng(0).standard_normal(int(seconds * 16000)) * 300
    mel_rows = np.zeros((EMB_WINDOW, 32), np.float32)
    emb_rows = np.zeros((HEAD_WINDOW, 96), np.float32)
    n = (len(x) - MEL_SAMPLES) // CHUNK
    c0 = resource.getrusage(resource.RUSAGE_SELF)
    for k in range(n):
        m = OwwScorer._run(ours._mel, x[None, k * CHUNK : k * CHUNK + MEL_SAMPLES].astype(np.float32), 1)
        mel_rows = np.concatenate([mel_rows[MELS_PER_CHUNK:], m.reshape(MELS_PER_CHUNK, 32) / 10.0 + 2.0])
        e = OwwScorer._run(emb1, mel_rows[None, :, :, None], 1)
        emb_rows = np.concatenate([emb_rows[1:], e])
        OwwScorer._run(ours._head, emb_rows[None], 1)
    c1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime)
    ring = x[: int(2.5 * 16000) // CHUNK * CHUNK]
    t0 = time.process_time()
    for _ in range(20):
        ours.probabilities(ring, pad_chunks=0)
    per_trigger = (time.process_time() - t0) / 20
    out = {
        "stream_percent_of_a_core": round(100 * cpu / (n * CHUNK / 16000), 2),
        "us_per_chunk": round(1e6 * cpu / n, 1),
        "ring_2_5s_ms_per_trigger": round(1000 * per_trigger, 1),
    }
    print(json.dumps(out))
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--check", type=Path, nargs="+", help="WAV files: compare with pyopen-wakeword's own library")
    p.add_argument("--cpu", type=float, help="seconds of audio: process CPU time of the stream, and per trigger")
    args = p.parse_args()
    if args.check:
        return check(args.check)
    if args.cpu:
        stream_cpu(args.cpu)
        return 0
    p.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
