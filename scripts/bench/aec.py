"""Echo cancellation benchmark (issue 24): the node's own playback in its microphone.

Near-end talker: real recorded commands (scripts.bench.speech_corpus.real_speech: pocketsphinx-testdata and
Asterisk prompts). The node's playback: real speech of other talkers (the pocketsphinx recordings not
in the test set and pitch-shifted Asterisk prompts not used as commands, as the TV noise of
scripts/bench/live_noise_audio.py) and real music (the Asterisk music-on-hold tracks), through a room path
(scripts/bench/echo_audio.py: delay 20-200 ms, reflections, a 0.3 s reverberant tail), at 0 and -10 dB
speech-to-echo ratio (SER: the command's active level over the echo's).

1. WER: one continuous recording per condition (playback throughout, the commands 2 s apart), run
   through the stream's echo cancellers (frontend/echo_cancel.py) with the reference; each command
   is cut (+-0.25 s) and transcribed by the engine: `speex` (SpeexDSP's output, the default
   frontend.echo_cancel), `webrtc` (WebRTC AEC3's, frontend.echo_cancel = "webrtc"), `no_aec` (the
   microphone as it is) and `no_playback` (the commands alone).
2. ERLE: on the same recordings' echo-only stretches, and the figure the stream reports.
3. Playback alone: `--idle-minutes` (10) of the node playing speech and music with nobody talking,
   echo at a talker's level (-26 dBFS), through the live pipeline in simulated time
   (scripts/bench/sim_live.py: real front-end, VAD, segmenter, engine): finals with the echo canceller
   (default config) and without it (target 0).
4. CPU: the echo cancellers' process time per 20 ms frame while the node plays (the WER recordings)
   and while it plays nothing (they rest), at normal priority (`uptime` with it).
5. Wake word over the node's music at 0 dB: the real "alexa" recordings (../shared/data/wake), whole
   (their own audio around the words, as bench/wake.py), in the node's music through the room path
   at 0 dB over the words: accepted at the shipped cutoff, detector on the microphone as it is (what
   the daemon does) and on the cancelled audio.

    make bench-aec   (python -m scripts.bench.aec --write scripts/bench/results/aec_benchmark.json)
    python -m scripts.bench.aec --part wake --write scripts/bench/results/aec_benchmark.json   (5. alone)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from scripts import REPO, command_line
from scripts.bench import audio_corpus as ac
from scripts.bench import echo_audio as ea
from scripts.bench import live_noise_audio as la
from scripts.bench import speech_corpus as sc
from voxnode.frontend.echo_cancel import LATENCY_SAMPLES

if TYPE_CHECKING:
    from scripts.bench.wake_audio import Recording

RATE, FRAME = 16000, 320
SPEECH_DBFS = -26.0
SERS = (0.0, -10.0)
PLAYBACK = ("speech", "music")
PARTS = {"wake": "wake_alexa_over_music_0db"}  # --part: the parts measured again alone, into the JSON
LEAD_S, GAP_S, CUT_S = 4.0, 2.0, 0.25


def playback(kind: str, n: int, seed: int, exclude: set[str]) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == "music":
        return la.music(n, rng)
    talkers = [la._shift(x, 0.88) for x in la._other_prompts(exclude)[::2]] + la._ps_extra()
    return la._talker(talkers, n, rng, (0.3, 1.2))


def cancel(mic: np.ndarray, ref: np.ndarray, recognition: str = "speex"):
    """The stream's echo cancellers (frontend.echo_cancel = `recognition`) over the whole recording
    -> (what the VAD hears, what recognition hears, the cancellers, cpu s per frame)."""
    from voxnode.frontend.echo_cancel import EchoCanceller

    ec = EchoCanceller(recognition)
    m = np.clip(np.round(mic), -32768, 32767).astype(np.int16)
    r = np.clip(np.round(ref), -32768, 32767).astype(np.int16)
    n = len(m) // FRAME
    vad, heard = np.zeros(n * FRAME, np.float32), np.zeros(n * FRAME, np.float32)
    t0 = time.process_time()
    for k in range(n):
        s = slice(k * FRAME, (k + 1) * FRAME)
        vad[s], heard[s] = ec.process(m[s], r[s])
    return vad, heard, ec, (time.process_time() - t0) / n


def session(utts, kind: str, ser: float, seed: int):
    """(near, echo, reference, spans): the commands at SPEECH_DBFS 2 s apart after LEAD_S, the
    playback's echo under them at `ser` dB, delay drawn in 20-200 ms."""
    rng = np.random.default_rng(seed)
    parts, spans, pos = [np.zeros(int(LEAD_S * RATE), np.float32)], [], int(LEAD_S * RATE)
    for u in utts:
        x = la.at_speech_dbfs(u.audio, SPEECH_DBFS)
        parts += [x, np.zeros(int(GAP_S * RATE), np.float32)]
        spans.append((pos, pos + len(x)))
        pos += len(x) + int(GAP_S * RATE)
    near = np.concatenate(parts)
    ref = playback(kind, len(near), seed, {u.name for u in utts})
    delay = float(rng.uniform(20, 200))
    echo = ea.echo_at(ref, ea.room_response(delay, seed=seed), 32768.0**2 * 10 ** (SPEECH_DBFS / 10), ser)
    return near, echo, ref, spans, delay


def wer_of(engine, audio: np.ndarray, spans, utts, shift: int = 0) -> dict:
    from voxnode.asr.wer import word_errors

    cut = int(CUT_S * RATE)
    hyps = [
        engine.transcribe((audio[max(0, a + shift - cut) : b + shift + cut] / 32768.0).astype(np.float32)).text
        for a, b in spans
    ]
    errors, words = word_errors(" ".join(u.text for u in utts), " ".join(hyps))
    return {"wer": round(errors / words, 3), "errors": errors, "words": words}


def erle_between(mic: np.ndarray, out: np.ndarray, spans) -> float:
    """mic power over output power on the echo-only stretches (after the first 2 s: AEC3 converging)."""
    mask = np.ones(len(out), bool)
    mask[: 2 * RATE] = False
    for a, b in spans:
        mask[max(0, a - RATE // 2) : b + RATE // 2] = False
    m, o = mic[: len(out)][mask].astype(np.float64), out[mask].astype(np.float64)
    return round(10 * np.log10(np.mean(m**2) / max(np.mean(o**2), 1e-9)), 1)


def bench_wer(engine, n_utts: int) -> dict:
    utts = [u for u in sc.real_speech(n_asterisk=n_utts) if u.source.startswith("asterisk")][:n_utts]
    utts += [u for u in sc.pocketsphinx()][:3]
    results: dict = {"commands": len(utts)}
    near, _, _, spans, _ = session(utts, "music", 0.0, 1)
    results["no_playback"] = wer_of(engine, near, spans, utts)
    print("no playback", results["no_playback"], flush=True)
    cpu = []
    for kind in PLAYBACK:
        for ser in SERS:
            near, echo, ref, spans, delay = session(utts, kind, ser, 7 + abs(int(ser)) + 20 * PLAYBACK.index(kind))
            mic = near + echo
            vad, heard, ec, per_frame = cancel(mic, ref)
            cpu.append(per_frame)
            _, out, _, _ = cancel(mic, ref, "webrtc")
            shift = LATENCY_SAMPLES  # AEC3's output is late; SpeexDSP's is not
            row = {
                "echo_delay_ms": round(delay, 1),
                "estimated_delay_ms": ec.delay.delay_ms,
                "no_aec": wer_of(engine, mic, spans, utts),
                "speex": wer_of(engine, heard, spans, utts),
                "webrtc": wer_of(engine, out, spans, utts, shift),
                "erle_db_speex": erle_between(mic, heard, spans),
                "erle_db_webrtc": erle_between(mic, out, spans),
                "erle_db_vad": erle_between(mic, vad, spans),
                "erle_reported_db": ec.erle_db,
                "cpu_percent_of_a_core": round(100 * per_frame / 0.020, 2),
            }
            results[f"{kind} {ser:+.0f} dB"] = row
            print(kind, ser, row, flush=True)
    results["cpu_ms_per_frame"] = round(1000 * float(np.median(cpu)), 3)
    return results


def cpu_resting(seconds: float = 60.0) -> dict:
    """The cancellers' CPU per 20 ms frame while the node plays nothing (a silent reference, a quiet
    room), the common case: they rest (frontend/echo_cancel.py REST_AFTER_FRAMES)."""
    mic = ac.at_dbfs(ac.noise("pink", int(seconds * RATE), seed=5), -55)
    _, _, ec, per_frame = cancel(mic, np.zeros_like(mic))
    return {"cpu_ms_per_frame": round(1000 * per_frame, 4), "rested_frames": ec.rested_frames}


def idle_finals(engine, minutes: float) -> dict:
    """Finals from `minutes` of the node playing (speech, then music) with nobody talking."""
    from scripts.bench.sim_live import SimClock, SimScheduler
    from voxnode.config import Config
    from voxnode.config.audio import AudioConfig
    from voxnode.stream.params import pipeline_params
    from voxnode.stream.pipeline import StreamPipeline

    n = int(minutes * 60 * RATE)
    ref = np.concatenate([playback("speech", n // 2, 21, set()), playback("music", n - n // 2, 22, set())])
    echo = ea.echo_at(ref, ea.room_response(80.0, seed=3), 32768.0**2 * 10 ** (SPEECH_DBFS / 10), 0.0)
    room = ac.at_dbfs(ac.noise("pink", n, seed=4), -60)
    mic = np.clip(np.round(echo + room), -32768, 32767).astype(np.int16)
    r = np.clip(np.round(ref), -32768, 32767).astype(np.int16)
    out = {}
    for label, reference in (("echo_reference", "ref"), ("no_echo_reference", "")):
        config = dataclasses.replace(Config(), audio=AudioConfig(device="mic", echo_reference=reference))
        clock = SimClock()
        sched = SimScheduler(engine, clock, config.stream.partial_max_wait_ms / 1000)
        finals: list[str] = []

        def emit(e, finals=finals):
            if e.as_dict().get("type") == "final":
                finals.append(e.as_dict()["text"])

        pipe = StreamPipeline("sim", pipeline_params(config, "mic"), sched, emit, clock)
        for i in range(len(mic) // FRAME):
            t = (i + 1) * FRAME / RATE
            clock.now = t
            sched.advance(t)
            s = slice(i * FRAME, (i + 1) * FRAME)
            pipe.feed(mic[s], i, t - FRAME / RATE, t - FRAME / RATE, r[s] if reference else None)
        pipe.flush()
        sched.advance(float("inf"))
        out[label] = {"finals": len(finals), "examples": finals[:5], "utterances": pipe.stats.utterances}
        print("idle", minutes, "min", label, out[label], flush=True)
    return {"minutes": minutes, **out}


def wake_mic(rec: Recording, i: int) -> tuple[np.ndarray, np.ndarray, float, float]:
    """The `i`th alexa recording (bench/wake_audio.py's Recording) with the node's music at 0 dB over its
    words through the room path -> (microphone, the music played, words start s, end s).

    The whole recording, its own audio around its words, as bench/wake_audio.py's recording_in_noise
    (the words alone before stop 36: their cut drops e.g. 198.wav's breathy onset into the "a");
    the clip's length, music and echo level are the same as the words alone get."""
    from scripts.bench.wake_audio import placed
    from scripts.bench.wake_conditions import LATE_S

    lead = 3.0 + 0.4 * (i % 3)
    near = placed(rec.words, lead, LATE_S + 0.3, rec.context)
    ref = playback("music", len(near), 100 + i, set())
    h = ea.room_response(float(np.random.default_rng(i).uniform(20, 200)), seed=i)
    # SER over the words' frames, as wake.py's SNR (the same as over the whole file in all 165: the
    # frames within 30 dB of each recording's loudest are all in its words)
    echo = ea.echo_at(ref, h, ea.active_power(rec.words), 0.0)
    return near + echo, ref, lead, lead + len(rec.words) / RATE


def wake_over_music(folder: Path) -> dict:
    """alexa recordings in the node's music at 0 dB through the room path: accepted at the shipped cutoff by
    the detector alone (on the microphone, WebRTC's output, SpeexDSP's), and as the daemon decides by default
    (`speex_whisper`: SpeexDSP's output at whisper_check.CUTOFF, each detection heard by Whisper)."""
    from scripts.bench.wake_audio import recordings
    from scripts.bench.wake_conditions import LATE_S
    from scripts.bench.wake_detect import detect, events
    from scripts.bench.wake_whisper import engine, heard_by_whisper
    from voxnode.wake import whisper_check
    from voxnode.wake.models import load_wake_model

    alexa = load_wake_model("alexa")
    cutoff = alexa.cutoff
    phrases = recordings(folder, "alexa")
    hits = {"microphone": 0, "webrtc": 0, "speex": 0, "speex_whisper": 0}
    engine()  # loaded before the first clip, not timed into it
    for i, rec in enumerate(phrases):
        mic, ref, start, end = wake_mic(rec, i)
        _, heard, _, _ = cancel(mic, ref)
        _, cancelled, _, _ = cancel(mic, ref, "webrtc")
        for label, audio in (("microphone", mic), ("webrtc", cancelled), ("speex", heard)):
            series = detect("alexa", audio).series
            fired = [t for t in events(series, cutoff) if start <= t <= end + LATE_S + 0.05]
            hits[label] += bool(fired)
            if label == "speex":  # the daemon's default since stop 52: Whisper checks what the detector heard
                checked = [t for t in events(series, whisper_check.CUTOFF) if start <= t <= end + LATE_S + 0.05]
                hits["speex_whisper"] += any(heard_by_whisper(audio, t, alexa) for t in checked)
    n = len(phrases)
    result = {
        "recordings": n,
        "cutoff": cutoff,
        "whisper_cutoff": whisper_check.CUTOFF,
        **{k: round(100 * v / max(1, n), 1) for k, v in hits.items()},
    }
    print("wake over music 0 dB", result, flush=True)
    return result


def part_only(args: argparse.Namespace) -> int:
    """--part wake: only the wake word over music, measured again into the existing --write JSON
    (the other parts kept); its `command` says what ran, when, at what load."""
    if not args.write or not args.write.is_file():
        raise SystemExit(f"--part {args.part} needs an existing --write JSON (make bench-aec writes it whole)")
    if not (args.wake_folder / "alexa").is_dir():
        raise SystemExit(f"--part wake: no recordings in {args.wake_folder / 'alexa'} (--wake-folder)")
    out = json.loads(args.write.read_text())
    load, t0, niced = os.getloadavg()[0], time.time(), os.nice(0)
    out["wake_alexa_over_music_0db"] = wake_over_music(args.wake_folder)
    whole = out.get("command", "").split(" || ")[0]  # the whole run's, without an earlier part's note
    out["command"] = (
        f"{whole} || {PARTS[args.part]} measured again alone: {command_line()}, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(t0))}, {f'nice {niced}, ' if niced else ''}"
        f"load {load:.1f} at start, {time.time() - t0:.0f} s"
    )
    args.write.write_text(json.dumps(out, indent=1) + "\n")
    print(f"written to {args.write}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--write", type=Path, help="save the results as JSON")
    ap.add_argument("--commands", type=int, default=10, help="Asterisk commands (plus 3 pocketsphinx ones)")
    ap.add_argument("--idle-minutes", type=float, default=10.0)
    # ../shared/data/wake beside the checkout (as bench/wake.py), or /work/shared from a worktree
    wake = next((p for p in (REPO.parent / "shared", REPO.parents[1] / "shared") if (p / "data/wake").is_dir()), None)
    ap.add_argument("--wake-folder", type=Path, default=(wake or REPO.parent / "shared") / "data" / "wake")
    ap.add_argument("--skip", nargs="*", default=[], choices=["wer", "idle", "wake"])
    ap.add_argument("--part", choices=sorted(PARTS), help="only this part, into the existing --write JSON")
    args = ap.parse_args()
    missing = sc.missing_packages()
    if missing:
        print("missing Debian packages: " + ", ".join(missing) + " (make deps-corpus)", file=sys.stderr)
        return 1
    if args.part:
        return part_only(args)
    from voxnode.asr import default_model_dir
    from voxnode.asr.whisper.engine import WhisperEngine

    engine = WhisperEngine.load(default_model_dir(), 2)
    results: dict = {"machine": os.uname().machine, "load_at_start": list(os.getloadavg())}
    if "wer" not in args.skip:
        results["wer"] = bench_wer(engine, args.commands)
        results["cpu_percent_of_a_core"] = round(100 * results["wer"]["cpu_ms_per_frame"] / 20.0, 2)
        rest = cpu_resting()
        results["cpu_percent_of_a_core_nothing_playing"] = round(100 * rest["cpu_ms_per_frame"] / 20.0, 3)
        results["load_after_wer"] = list(os.getloadavg())
    if "idle" not in args.skip:
        results["playback_alone"] = idle_finals(engine, args.idle_minutes)
    if "wake" not in args.skip and (args.wake_folder / "alexa").is_dir():
        results["wake_alexa_over_music_0db"] = wake_over_music(args.wake_folder)
    print(json.dumps(results, indent=1))
    if args.write:
        args.write.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
