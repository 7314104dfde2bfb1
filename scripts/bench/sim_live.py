"""Replay the live pipeline offline, in simulated time: a fast, repeatable segmentation check.

A continuous recording (real speech with pauses, noise running throughout) goes frame by frame
through the real FrontEnd -> Segmenter -> StreamPipeline. Decode jobs run on the real engine, but
in simulated time: one decode worker, a job starts when the worker is free and finishes after its
measured run time, and its result is delivered when the simulated clock passes that moment. So
endpointing, speculative finals and partials behave as they do live with one worker, without ALSA
or waiting for real time (about 10x faster than real time here). `scripts/bench/live_noise.py`
(real ALSA, real daemon, real time) stays the measure of record; this is for iterating.

    PYTHONPATH=daemon python -m scripts.bench.sim_live --noise pink --snr 5 [--set vad.hangover_ms=700]

With `vad.end_of_turn` (the default) the end-of-turn model answers each pause on its own thread in
simulated time too (scripts/bench/sim_turn.py). `--track clean,pink-10,babble-10,pauses` replays
the live-noise benchmark's recordings instead of its own; `--save F` appends each row (JSON lines).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from scripts.bench import audio_corpus as ac
from scripts.bench import speech_corpus as sc
from scripts.bench.machine import describe, load
from voxnode.config import Config
from voxnode.stream.jobs import DecodeJob, JobKind, JobOutcome
from voxnode.stream.params import pipeline_params
from voxnode.stream.pipeline import StreamPipeline

FRAME = 320
RATE = 16000
ABANDON_S = 0.015  # a partial given up stops at its next model call: one decoder step, or the encoder


# ---- the recording ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Placed:
    text: str
    start: float  # seconds, first speech sample
    end: float  # seconds, last speech sample


def trim(x: np.ndarray) -> tuple[np.ndarray, int, int]:
    """Clip with at most 0.15 s of its own silence either side; (clip, speech start, speech end) in samples."""
    lab = ac.label_speech(x)
    idx = np.nonzero(lab)[0]
    first, last = int(idx[0]) * FRAME, (int(idx[-1]) + 1) * FRAME
    lo, hi = max(0, first - 2400), min(len(x), last + 2400)
    return x[lo:hi], first - lo, last - lo


def split_pause(clip: np.ndarray, s0: int, s1: int, pause_s: float) -> tuple[np.ndarray, int]:
    """Insert `pause_s` of silence at the quietest 60 ms between 30 % and 70 % of the speech (a word
    gap), as a speaker who stops to think mid-sentence; returns the clip and the new speech end."""
    if pause_s <= 0 or s1 - s0 < 2 * RATE:
        return clip, s1
    lv = ac.frame_levels_db(clip)
    lo, hi = (s0 + int(0.3 * (s1 - s0))) // FRAME, (s0 + int(0.7 * (s1 - s0))) // FRAME
    smooth = np.convolve(lv, np.ones(3) / 3, mode="same")
    at = (lo + int(np.argmin(smooth[lo:hi]))) * FRAME
    pad = int(pause_s * RATE)
    return np.concatenate([clip[:at], np.zeros(pad, np.float32), clip[at:]]), s1 + pad


def recording(
    noise: str,
    snr: float,
    n_asterisk: int = 15,
    pause_s: float = 2.0,
    lead_s: float = 3.0,
    seed: int = 0,
    speech_dbfs: float = -26.0,
    inner_pause_s: float = 0.0,
) -> tuple[np.ndarray, list[Placed]]:
    rng = np.random.default_rng(seed)
    parts, placed, pos = [ac.silence(lead_s)], [], int(lead_s * RATE)
    for u in sc.real_speech(n_asterisk=n_asterisk, seed=seed):
        clip, s0, s1 = trim(ac.at_dbfs(u.audio, speech_dbfs + rng.uniform(-3, 3)))
        clip, s1 = split_pause(clip, s0, s1, inner_pause_s)
        parts += [clip, ac.silence(pause_s)]
        placed.append(Placed(u.text, (pos + s0) / RATE, (pos + s1) / RATE))
        pos += len(clip) + int(pause_s * RATE)
    clean = np.concatenate(parts)
    clean = clean[: len(clean) // FRAME * FRAME]
    if noise == "clean":
        return clean, placed
    labels = np.zeros(len(clean) // FRAME, dtype=bool)
    for p in placed:
        labels[int(p.start * RATE) // FRAME : int(p.end * RATE) // FRAME] = True
    if noise == "music":
        tracks = sc.music_tracks()
        nz = np.concatenate([t for _, t in tracks])
        nz = np.tile(nz, len(clean) // len(nz) + 1)[: len(clean)]
    else:
        nz = ac.noise(noise, len(clean), seed=seed + 7)
    return ac.mix(clean, nz, snr, labels), placed


# ---- simulated-time decode worker ------------------------------------------------------------


class SimScheduler:
    """What StreamPipeline uses of DecodeScheduler, with one worker in simulated time."""

    def __init__(self, engine, clock: SimClock, partial_max_wait_s: float = 1.0, scale: float = 1.0):
        self.engine = engine
        self.scale = scale  # a decode lasts its CPU time here times this (a slower board)
        self.clock = clock
        self.queue: list[DecodeJob] = []
        self.running: tuple[DecodeJob, float, object] | None = None
        self.free_at = 0.0
        self.holds: set[str] = set()
        self.partial_max_wait_s = partial_max_wait_s
        self.decodes = 0
        self.busy_s = 0.0

    def submit(self, job: DecodeJob) -> None:
        job.submitted = self.clock.now
        if job.kind in (JobKind.PARTIAL, JobKind.SPECULATIVE):
            for old in [j for j in self.queue if j.stream == job.stream and j.kind == job.kind]:
                self.queue.remove(old)
                old.on_done(old, JobOutcome.SKIPPED if old.kind == JobKind.PARTIAL else JobOutcome.CANCELLED, None)
        self.queue.append(job)
        if job.kind != JobKind.PARTIAL and self.running is not None and self.running[0].kind == JobKind.PARTIAL:
            self._abandon_running()  # as DecodeScheduler does: the partial gives way

    def cancel(self, job: DecodeJob) -> None:
        job.cancelled = True
        if job in self.queue:
            self.queue.remove(job)
            job.on_done(job, JobOutcome.CANCELLED, None)
        elif self.running is not None and self.running[0] is job and job.kind == JobKind.SPECULATIVE:
            self._abandon_running()  # as DecodeScheduler does: a voided speculation gives the engine up

    def _abandon_running(self) -> None:
        """The running job stops at its next model call (ABANDON_S later at most); its result is dropped."""
        assert self.running is not None
        running, finish, _ = self.running
        running.abandon.set()
        end = min(finish, max(running.started, self.clock.now) + ABANDON_S)
        self.busy_s -= finish - end
        self.free_at = end
        self.running = (running, end, None)

    def promote(self, job: DecodeJob) -> bool:
        if job in self.queue:
            job.kind = JobKind.FINAL
            return True
        return False

    def hold_partials(self, stream: str, hold: bool) -> None:
        (self.holds.add if hold else self.holds.discard)(stream)

    def advance(self, now: float) -> None:
        """Run and deliver everything that finishes by `now` (simulated seconds)."""
        while True:
            if self.running is not None:
                job, finish, result = self.running
                if finish > now:
                    return
                self.running = None
                self.clock.now = finish
                job.finished = finish
                if job.abandon.is_set():
                    outcome = JobOutcome.SKIPPED if job.kind == JobKind.PARTIAL else JobOutcome.CANCELLED
                else:
                    outcome = JobOutcome.CANCELLED if job.cancelled else JobOutcome.DONE
                job.on_done(job, outcome, result)
                self.clock.now = now
                continue
            job = self._pick(now)
            if job is None:
                return
            self._run(job)

    def _run(self, job: DecodeJob) -> None:
        """Decode `job` as DecodeScheduler._run does: with the stream's prompt, hotwords and the
        utterance's draft (before issue 27 the simulation left them out, and so never showed the
        repeated finals drafts caused live)."""
        start = max(self.free_at, job.submitted)
        # CPU time of this thread, not wall time: with one inference thread LiteRT runs in the
        # caller, and CPU time is far less disturbed by other work on a shared machine.
        t0 = time.thread_time()
        result = self.engine.transcribe(
            job.audio,
            role="partial" if job.kind == JobKind.PARTIAL else "final",
            prompt=job.prompt,
            hotwords=job.hotwords,
            **({"draft": job.draft} if job.draft else {}),
        )
        run = (time.thread_time() - t0) * self.scale
        self.decodes += 1
        self.busy_s += run
        job.started, self.free_at = start, start + run
        self.running = (job, start + run, result)

    def _pick(self, now: float) -> DecodeJob | None:
        for kind in JobKind:
            if kind == JobKind.PARTIAL and self.holds:
                return None
            for job in [j for j in self.queue if j.kind == kind]:
                self.queue.remove(job)
                if (
                    kind == JobKind.PARTIAL
                    and max(self.free_at, job.submitted) - job.submitted > self.partial_max_wait_s
                ):
                    job.on_done(job, JobOutcome.SKIPPED, None)
                    continue
                return job
        return None


class SimClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


# ---- one run ---------------------------------------------------------------------------------


def simulate(config: Config, audio: np.ndarray, engine, turn_model=None, scale=(1.0, 1.0)) -> tuple[list[dict], dict]:
    """`turn_model`: the end-of-turn model (stream/turn.py TurnModel) when [vad] end_of_turn asks it,
    on its own thread in simulated time (scripts/bench/sim_turn.py); None: the text decides alone.
    `scale`: the decodes' and the model's CPU times are multiplied by these (a slower board)."""
    from scripts.bench.sim_turn import SimTurn

    clock = SimClock()
    sched = SimScheduler(engine, clock, config.stream.partial_max_wait_ms / 1000, scale[0])
    turn = SimTurn(turn_model, clock, scale[1]) if turn_model is not None and config.vad.end_of_turn != "off" else None
    events: list[dict] = []
    pipe = StreamPipeline(
        "sim",
        pipeline_params(config),
        sched,
        lambda e: events.append({**e.as_dict(), "t": clock.now, "start_s": e.start, "end_s": e.end}),
        clock,
        turn=turn,  # type: ignore[arg-type]
    )

    def advance(t: float) -> None:  # decode results and the model's answers, in the order they come
        while turn is not None and (at := turn.next_at()) is not None and at <= t:
            sched.advance(at)
            turn.deliver(at)
        sched.advance(t)
        clock.now = t

    n = len(audio) // FRAME
    t_cpu = time.process_time()
    for i in range(n):
        t = (i + 1) * FRAME / RATE  # the frame is complete (captured) at its end
        clock.now = t
        advance(t)
        pipe.feed(audio[i * FRAME : (i + 1) * FRAME], i, t - FRAME / RATE, t - FRAME / RATE)
    pipe.flush()
    advance(float("inf"))
    stats = {
        "decodes": sched.decodes,
        "engine_s": round(sched.busy_s, 2),
        "turn_calls": turn.count if turn is not None else 0,
        "turn_s": round(turn.busy_s, 2) if turn is not None else 0.0,
        "cpu_s": round(time.process_time() - t_cpu, 2),
        **pipe.stats.as_dict(),
    }
    return events, stats


def score(events: list[dict], placed: list[Placed], noisy: np.ndarray, engine, offline: bool = True) -> dict:
    from scripts.bench import scoring

    finals = [e for e in events if e["type"] == "final"]
    per_utt = [0] * len(placed)
    latencies, sentence_latencies, false_finals = [], [], 0
    for f in finals:
        hit = [i for i, p in enumerate(placed) if f["start_s"] < p.end + 0.1 and f["end_s"] > p.start - 0.1]
        if not hit:
            false_finals += 1
            continue
        for i in hit:
            per_utt[i] += 1
        last = placed[hit[-1]]
        lat = (f["t"] - last.end) * 1e3
        latencies.append(lat)
        if f["text"].rstrip()[-1:] in ".?!":  # live_noise's "sentences": finals that end on a closing mark
            sentence_latencies.append(lat)
    live = scoring.corpus_score([" ".join(p.text for p in placed)], [" ".join(f["text"] for f in finals)])
    out = {
        "utterances": len(placed),
        "finals": len(finals),
        "false_finals": false_finals,
        "finals_per_utt": round(len(finals) / len(placed), 2),
        "utts_split": sum(c > 1 for c in per_utt),
        "utts_missed": sum(c == 0 for c in per_utt),
        "live_wer": round(live.wer, 1),
        "lat_p50": round(float(np.percentile(latencies, 50)), 0) if latencies else None,
        "lat_p95": round(float(np.percentile(latencies, 95)), 0) if latencies else None,
        "sent_p50": round(float(np.percentile(sentence_latencies, 50)), 0) if sentence_latencies else None,
        "sent_p95": round(float(np.percentile(sentence_latencies, 95)), 0) if sentence_latencies else None,
    }
    if offline:
        hyps = []
        for p in placed:
            lo, hi = max(0, int((p.start - 0.3) * RATE)), int((p.end + 0.3) * RATE)
            hyps.append(engine.transcribe(noisy[lo:hi] / 32768.0).text)
        off = scoring.corpus_score([p.text for p in placed], hyps)
        out["transcribe_wer"] = round(off.wer, 1)
    return out


def apply_overrides(config: Config, sets: list[str]) -> Config:
    for item in sets:
        key, value = item.split("=", 1)
        section, name = key.split(".")
        sec = getattr(config, section)
        cur = getattr(sec, name)
        v = json.loads(value) if not isinstance(cur, str) else value
        config = dataclasses.replace(config, **{section: dataclasses.replace(sec, **{name: v})})
    return config


def recordings(args) -> list[tuple[str, np.ndarray, list[Placed]]]:
    """(name, audio, utterances): sim_live's own recordings (--noise, --snr), or with --track the
    live-noise benchmark's (scripts/bench/live_noise_audio.py: the same 25 utterances, seed 9, its
    `pauses` condition with 300-700 ms pauses inside sentences)."""
    from scripts.bench import live_noise_audio as la

    out = []
    for name in args.track.split(",") if args.track else []:
        t = la.cached_track(la.Condition.parse(name), 25, 9, 600.0)
        out.append((name, t.audio, [Placed(u.text, u.speech_start / RATE, u.speech_end / RATE) for u in t.utts]))
    for noise in [] if args.track else args.noise.split(","):
        for snr in [None] if noise == "clean" else [float(s) for s in args.snr.split(",")]:
            pause = args.inner_pause_ms / 1000
            audio, placed = recording(noise, snr or 0, args.asterisk, speech_dbfs=args.speech_dbfs, inner_pause_s=pause)
            out.append((noise if snr is None else f"{noise}-{snr:g}", audio, placed))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--noise", default="clean,white,pink,babble,hvac,music")
    ap.add_argument("--snr", default="10")
    ap.add_argument("--track", help="live_noise conditions (clean,pink-10,pauses,...) instead of --noise/--snr")
    ap.add_argument("--set", action="append", default=[], help="config override section.key=value")
    ap.add_argument("--asterisk", type=int, default=15)
    ap.add_argument("--speech-dbfs", type=float, default=-26.0, help="mean speech level (the noise follows the SNR)")
    ap.add_argument("--inner-pause-ms", type=float, default=0, help="a pause this long inside each utterance over 2 s")
    ap.add_argument("--no-offline", action="store_true", help="skip the per-utterance transcribe WER")
    ap.add_argument("--show", action="store_true", help="print every final")
    ap.add_argument("--save", type=Path, help="append each row, with the command, machine and load (JSON lines)")
    ap.add_argument("--scale", default="1,1", help="decode,model CPU time factors: a slower board (Pi 5 ~1.4,2.5)")
    args = ap.parse_args()
    from voxnode.asr import default_model_dir
    from voxnode.asr.whisper.engine import WhisperEngine

    engine = WhisperEngine.load(default_model_dir(), 1)
    config = apply_overrides(Config(), args.set)
    from voxnode.stream.turn import TurnModel

    turn_model = TurnModel() if config.vad.end_of_turn != "off" else None  # as the daemon: asked at every pause
    print(
        "| recording | finals/utt | split | missed | false | live WER | transcribe WER | lat p50 / p95 "
        "| sentences p50 / p95 | ended by mark+model / sentence end | decodes |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, audio, placed in recordings(args):
        events, stats = simulate(config, audio, engine, turn_model, tuple(float(x) for x in args.scale.split(",")))
        r = score(events, placed, audio, engine, offline=not args.no_offline)
        print(
            f"| {name} | {r['finals_per_utt']} | {r['utts_split']} | {r['utts_missed']} | {r['false_finals']} | "
            f"{r['live_wer']} | {r.get('transcribe_wer', '')} | {r['lat_p50']} / {r['lat_p95']} | "
            f"{r['sent_p50']} / {r['sent_p95']} | {stats['endpoints_agreed']} / {stats['endpoints_sentence_end']} | "
            f"{stats['decodes']} |",
            flush=True,
        )
        finals = [(e["start_s"], e["end_s"], e["t"], e["text"]) for e in events if e["type"] == "final"]
        if args.save:
            row = {"recording": name, "settings": args.set, **r, **stats, "command": " ".join(sys.argv[1:])}
            with args.save.open("a") as f:
                f.write(json.dumps({**row, "machine": describe(), "load": load(), "finals": finals}) + "\n")
        for start, end, t, text in finals if args.show else []:
            print(f"    {start:7.2f}-{end:7.2f} @{t:7.2f}  {text}")


if __name__ == "__main__":
    main()
