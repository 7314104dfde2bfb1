"""Live recognition in continuous background noise (issue 9): the real daemon, real ALSA, real speech.

Per condition (scripts/bench/live_noise_audio.py makes the audio: 25 real utterances, 2 s pauses, noise
running throughout at a given SNR), the benchmark:

1. writes a config file (defaults + `--set section.key=value` + `--config-extra FILE`) and an
   ALSA config with a `type file` PCM reading a FIFO;
2. starts `voxnode run --stdout --config ...` from the project venv (.venv) and, from a separate
   pacer process, writes the recording into the FIFO one 20 ms period at a time in real time,
   noting when each period was written (CLOCK_MONOTONIC);
3. reads the daemon's JSON lines as they come (noting when each was read), stops the daemon
   after the tail, and reads its shutdown line for dropped frames;
4. runs `voxnode transcribe` on every utterance cut from the same noisy recording (clip +- 0.25 s),
   the recogniser with perfect segmentation;
5. scores (scripts/bench/scoring.py: jiwer over Whisper's English normaliser): live WER over the whole
   recording (all finals in order, false ones included, against all references in order), the
   transcribe WER, finals per utterance, and end-of-speech -> final latency measured from the
   TRUE end of speech (when the pacer wrote the period holding the utterance's last speech sample)
   to when the final's JSON line was read; the daemon's own `latency_ms` (from the speech end its
   VAD detected) is reported beside it.

Noise alone (`noise-KIND` conditions): `--noise-minutes` of one noise kind at -35 dBFS, false finals
per hour. `--noise-speed S` plays it S times faster than real time: segmentation counts frames and
finals decode the same audio, so the count is the same as long as no frame is dropped (checked:
the daemon's dropped-frame counter must be 0, else the result is marked invalid).

    .venv-bench/bin/python -m scripts.bench.live_noise --quick
    .venv-bench/bin/python -m scripts.bench.live_noise --label webrtc --write docs/benchmarks.md
    .venv-bench/bin/python -m scripts.bench.live_noise --label spectral --set vad.engine='"spectral"' \
        --conditions clean,pauses,white-10,pink-5
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from scripts import REPO as ROOT
from scripts import RESULTS
from scripts.bench import audio_corpus as ac
from scripts.bench import emulate_board, scoring
from scripts.bench import live_noise_audio as la
from scripts.bench import live_noise_report as report

VOXNODE = ROOT / ".venv" / "bin" / "voxnode"
DEFAULT_JSON = RESULTS / "live_noise_benchmark.json"
CUT_MARGIN_S = 0.25  # transcribe cuts: the clip (with its own edges) +- this
SETTLE_S = 1.5  # after the last period: the last decode finishes (the tail already gave the endpoint)
PERIOD_BYTES = 640

PACER = r"""
import json, os, sys, time
fifo, pcm, speed, times_path = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
data = open(pcm, 'rb').read()
fd = os.open(fifo, os.O_WRONLY)  # blocks until the daemon has opened its PCM (after loading the model)
n = len(data) // 640
period = 0.02 / speed
times = [0.0] * n
t0 = time.monotonic()
print(json.dumps({'t0_mono': t0, 'wall_minus_mono': time.time() - time.monotonic()}), flush=True)
for i in range(n):
    os.write(fd, data[i * 640:(i + 1) * 640])
    times[i] = time.monotonic()
    delay = t0 + (i + 1) * period - time.monotonic()
    if delay > 0:
        time.sleep(delay)
with open(times_path, 'w') as f:
    json.dump(times, f)
print(json.dumps({'done_mono': time.monotonic()}), flush=True)
sys.stdin.read()  # keep the FIFO open (EOF would feed ALSA stale data) until told to go
"""


# ---- config ---------------------------------------------------------------------------


def parse_sets(items: list[str]) -> dict[str, dict]:
    """["vad.engine=\"spectral\"", "vad.hangover_ms=700"] -> {"vad": {...}}; bare words are strings."""
    out: dict[str, dict] = {}
    for item in items:
        key, sep, val = item.partition("=")
        section, dot, name = key.strip().partition(".")
        if not sep or not dot:
            raise SystemExit(f"--set {item!r}: expected section.key=value")
        try:
            value = tomllib.loads(f"v = {val}")["v"]
        except tomllib.TOMLDecodeError:
            value = val
        out.setdefault(section, {})[name] = value
    return out


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    return repr(v)


def write_config(path: Path, device: str, extra_text: str, sets: dict[str, dict]) -> None:
    base = {"log": {"level": "info"}, "audio": {"device": device}}
    extra = tomllib.loads(extra_text) if extra_text else {}
    merged: dict[str, dict] = {}
    for layer in (base, extra, sets):
        for section, values in layer.items():
            merged.setdefault(section, {}).update(values)
    lines = []
    for section, values in merged.items():
        lines.append(f"[{section}]")
        lines += [f"{k} = {toml_value(v)}" for k, v in values.items()]
        lines.append("")
    path.write_text("\n".join(lines))


def alsa_conf(work: Path, lanes: int) -> None:
    (work / "alsa").mkdir(exist_ok=True)
    conf = ""
    for i in range(lanes):
        fifo = work / f"lane{i}.fifo"
        if not fifo.exists():
            os.mkfifo(fifo)
        conf += (
            f'pcm.livebench{i} {{\n type file\n slave.pcm "null"\n file "/dev/null"\n'
            f' infile "{fifo}"\n format "raw"\n}}\n'
        )
    (work / "alsa" / "asoundrc").write_text(conf)


def _children_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def loadavg() -> list[float]:
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


# ---- one live run -----------------------------------------------------------------------


def play_live(
    track: la.Track, work: Path, lane: int, config_path: Path, speed: float = 1.0, board: str = "x86"
) -> dict:
    """Play the track into a fresh daemon in real time (or `speed` x); events with read times.
    `board`: the daemon (only it: not the pacer, not the scoring) runs under scripts/bench/emulate_board.py."""
    pcm = work / f"lane{lane}.pcm"
    pcm.write_bytes(ac.to_pcm16(track.audio))
    times_path = work / f"lane{lane}.times.json"
    env = {**os.environ, "XDG_CONFIG_HOME": str(work), "PYTHONMALLOC": "malloc"}
    errlog = open(work / f"lane{lane}-{track.condition.name}.stderr", "w+")  # noqa: SIM115 - lives as long as the daemon, closed below
    children_cpu0 = _children_cpu_s()
    t_start = time.monotonic()
    daemon = subprocess.Popen(
        [*emulate_board.argv_prefix(board), str(VOXNODE), "run", "--stdout", "--config", str(config_path)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=errlog,
        text=True,
    )
    events: list[tuple[float, dict]] = []

    def read_events():
        for line in daemon.stdout:
            t = time.monotonic()
            try:
                events.append((t, json.loads(line)))
            except json.JSONDecodeError:
                pass

    reader = threading.Thread(target=read_events, daemon=True)
    reader.start()
    pacer = subprocess.Popen(
        [sys.executable, "-c", PACER, str(work / f"lane{lane}.fifo"), str(pcm), str(speed), str(times_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        head = json.loads(pacer.stdout.readline())
        done = pacer.stdout.readline()
        if not done:
            raise RuntimeError("pacer ended early")
        time.sleep(SETTLE_S)
        daemon.send_signal(signal.SIGTERM)
        time.sleep(0.3)
    finally:
        pacer.stdin.close()  # the FIFO closes: a capture blocked in its read returns
        before_pacer = _children_cpu_s()
        pacer.wait(10)
        pacer_cpu_s = _children_cpu_s() - before_pacer
        try:
            daemon.wait(30)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait(5)
        reader.join(5)
    # The daemon's CPU over its whole run, start-up included: children's usage is counted when they
    # are reaped, and the pacer was reaped before (its usage is taken out by the snapshot below it).
    # Under an emulated board the emulator says what the daemon alone used (its own polling costs
    # ~10 % of a host core, more than the daemon on a board).
    daemon_cpu_s = _children_cpu_s() - children_cpu0 - pacer_cpu_s
    run_s = time.monotonic() - t_start
    errlog.seek(0)
    stderr = errlog.read()
    emulated = re.search(r"emulate_board: command CPU ([\d.]+) s", stderr)
    if emulated:
        daemon_cpu_s = float(emulated.group(1))
    errlog.close()
    write_times = np.array(json.loads(times_path.read_text()))
    m = re.search(r"stopped: (\d+) frames, (\d+) dropped, (\d+) xruns", stderr)
    return {
        "events": events,
        "write_times": write_times,
        "wall_minus_mono": head["wall_minus_mono"],
        "frames": int(m.group(1)) if m else None,
        "dropped_frames": int(m.group(2)) if m else None,
        "xruns": int(m.group(3)) if m else None,
        "finals_lost": len(re.findall(r"final for utterance \d+ lost|final for stream \S+ dropped", stderr)),
        "daemon_rc": daemon.returncode,
        "daemon_cpu_pct": round(100 * daemon_cpu_s / run_s, 1) if run_s > 0 else None,
        "stderr_tail": stderr[-2000:] if daemon.returncode else "",
    }


# ---- transcribe reference ----------------------------------------------------------------


def transcribe_cuts(tracks: list[la.Track], work: Path, cache: Path, config: Path) -> dict[tuple[str, int], str]:
    """`voxnode transcribe` (with the live runs' config: the same front-end and model) on every
    utterance cut from its noisy recording; cached by audio and config."""
    import hashlib

    known = json.loads(cache.read_text()) if cache.exists() else {}
    # The audio device differs between lanes and does not matter to transcribe.
    settings = re.sub(r"(?m)^device = .*$", "", config.read_text())
    todo, keys = [], {}
    for t in tracks:
        for i, u in enumerate(t.utts):
            m = int(CUT_MARGIN_S * la.RATE)
            cut = t.audio[max(0, u.clip_start - m) : u.clip_end + m]
            pcm = ac.to_pcm16(cut)
            h = hashlib.sha1(pcm + settings.encode()).hexdigest()[:20]
            keys[(t.condition.name, i)] = h
            if h not in known:
                path = work / f"cut-{h}.raw"
                path.write_bytes(pcm)
                todo.append((h, path))
    if todo:
        env = {**os.environ, "PYTHONMALLOC": "malloc"}
        out = subprocess.run(
            [str(VOXNODE), "transcribe", "--config", str(config), "--raw", "--json", *[str(p) for _, p in todo]],
            env=env,
            capture_output=True,
            text=True,
        )
        by_file = {}
        for line in out.stdout.splitlines():
            d = json.loads(line)
            by_file[d["file"]] = d["text"]
        for h, p in todo:
            if str(p) not in by_file:
                raise RuntimeError(f"voxnode transcribe gave nothing for {p}: {out.stderr[-500:]}")
            known[h] = by_file[str(p)]
            p.unlink()
        cache.write_text(json.dumps(known))
    return {k: known[h] for k, h in keys.items()}


# ---- scoring -----------------------------------------------------------------------------


def _ts(iso: str) -> float:
    return dt.datetime.fromisoformat(iso).timestamp()


def pct(a, q):
    return round(float(np.percentile(a, q)), 1) if len(a) else None


def score_condition(track: la.Track, live: dict, transcribed: list[str]) -> dict:
    wt = live["write_times"]
    off = live["wall_minus_mono"]
    finals = [(t, e) for t, e in live["events"] if e.get("type") == "final"]

    def sample_at_wall(wall: float) -> int:
        """Track sample written at this wall time (via the pacer's write times)."""
        i = int(np.searchsorted(wt, wall - off))
        return min(i, len(wt)) * la.FRAME

    refs = [u.text for u in track.utts]
    tol = int(0.1 * la.RATE)
    spans = []  # per final: (start sample, end sample, overlapped utterance indices)
    for _, e in finals:
        s, t = sample_at_wall(_ts(e["start"])), sample_at_wall(_ts(e["end"]))
        ov = [k for k, u in enumerate(track.utts) if s < u.speech_end + tol and t > u.speech_start - tol]
        spans.append((s, t, ov))
    live_score = scoring.score(" ".join(refs), " ".join(e["text"] for _, e in finals))
    tr_score = scoring.corpus_score(refs, transcribed)
    per_utt = [[j for j, sp in enumerate(spans) if k in sp[2]] for k in range(len(track.utts))]
    lat_true, lat_daemon, end_offset = [], [], []
    for k, u in enumerate(track.utts):
        if not per_utt[k]:
            continue
        j = max(per_utt[k], key=lambda j: spans[j][1])  # the final holding the utterance's end
        t_read, e = finals[j]
        t_end = wt[min(len(wt) - 1, (u.speech_end - 1) // la.FRAME)]
        lat_true.append(1e3 * (t_read - t_end))
        lat_daemon.append(float(e["latency_ms"]))
        # Where the daemon put the speech end (the final's "end") vs the true end, in audio time:
        # what segmentation adds to the latency whatever the machine's load (+ = hangs on).
        end_offset.append(1e3 * (spans[j][1] - u.speech_end) / la.RATE)
    speech_finals = [sp for sp in spans if sp[2]]
    n = len(track.utts)
    split_utts = [k for k in range(n) if len(per_utt[k]) > 1]
    res = {
        "utterances": n,
        "words": live_score.words,
        "transcribe_wer": round(tr_score.wer, 2),
        "live_wer": round(live_score.wer, 2),
        "live_sub_del_ins": [live_score.substitutions, live_score.deletions, live_score.insertions],
        "finals": len(finals),
        "finals_per_utt": round(len(speech_finals) / n, 3),
        "false_finals": len(spans) - len(speech_finals),
        "merged_finals": sum(1 for sp in spans if len(sp[2]) > 1),
        "split_utts": len(split_utts),
        "missed_utts": sum(1 for p in per_utt if not p),
        "latency_true_p50_ms": pct(lat_true, 50),
        "latency_true_p95_ms": pct(lat_true, 95),
        "latency_true_max_ms": round(max(lat_true), 1) if lat_true else None,
        "latency_daemon_p50_ms": pct(lat_daemon, 50),
        "latency_daemon_p95_ms": pct(lat_daemon, 95),
        "latency_n": len(lat_true),
        "end_offset_p50_ms": pct(end_offset, 50),
        "end_offset_p95_ms": pct(end_offset, 95),
        "frames": live["frames"],
        "dropped_frames": live["dropped_frames"],
        "finals_lost": live["finals_lost"],
        "daemon_cpu_pct": live["daemon_cpu_pct"],
        "noise_dbfs": track.noise_dbfs,
        "detail": {
            "refs": refs,
            "transcribe": transcribed,
            "live": [e["text"] for _, e in finals],
            "live_utts": [sp[2] for sp in spans],
            "latency_true_ms": [round(x) for x in lat_true],
            "latency_daemon_ms": [round(x) for x in lat_daemon],
            "end_offset_ms": [round(x) for x in end_offset],
        },
    }
    if track.condition.room:
        res["level_thirds"] = score_thirds(track, [e["text"] for _, e in finals], spans, transcribed)
    if track.condition.pauses:
        inner = [k for k, u in enumerate(track.utts) if u.inner_pause_ms]
        res["inner_pause_utts"] = len(inner)
        res["finals_per_utt_with_inner_pause"] = round(sum(len(per_utt[k]) for k in inner) / max(1, len(inner)), 3)
        res["split_by_pause_ms"] = {
            str(p): [
                sum(1 for k in inner if track.utts[k].inner_pause_ms == p and len(per_utt[k]) > 1),
                sum(1 for k in inner if track.utts[k].inner_pause_ms == p),
            ]
            for p in la.INNER_PAUSES_MS
        }
    return res


def score_thirds(track: la.Track, live_texts: list[str], spans: list, transcribed: list[str]) -> dict:
    """Room conditions: WER per talker-level third. Live, each final counts for the first utterance
    it overlaps (a final overlapping none is a false one and counts only in the overall figure)."""
    live_by_utt: list[list[str]] = [[] for _ in track.utts]
    for text, (_, _, ov) in zip(live_texts, spans, strict=True):
        if ov:
            live_by_utt[ov[0]].append(text)
    out = {}
    for name, ks in la.level_thirds(track.utts).items():
        refs = [track.utts[k].text for k in ks]
        live = scoring.corpus_score(refs, [" ".join(live_by_utt[k]) for k in ks])
        offline = scoring.corpus_score(refs, [transcribed[k] for k in ks])
        levels = [track.utts[k].level_dbfs for k in ks]
        out[name] = {
            "utterances": len(ks),
            "words": live.words,
            "level_dbfs": [round(min(levels), 1), round(max(levels), 1)],
            "live_wer": round(live.wer, 2),
            "transcribe_wer": round(offline.wer, 2),
        }
    return out


def score_noise_alone(track: la.Track, live: dict, speed: float) -> dict:
    finals = [e for _, e in live["events"] if e.get("type") == "final"]
    hours = track.duration_s / 3600
    return {
        "noise_dbfs": track.noise_dbfs,
        "minutes": round(track.duration_s / 60, 1),
        "speed": speed,
        "false_finals": len(finals),
        "false_finals_per_hour": round(len(finals) / hours, 1),
        "examples": [e["text"] for e in finals[:5]],
        "frames": live["frames"],
        "dropped_frames": live["dropped_frames"],
        "valid": live["dropped_frames"] == 0,
    }


# ---- main --------------------------------------------------------------------------------


def all_conditions() -> list[str]:
    return ["clean", "pauses"] + [f"{k}-{s}" for k in la.KINDS for s in la.SNRS]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--label", default="", help="name of this run in the results (e.g. webrtc, spectral)")
    ap.add_argument(
        "--board",
        default="x86",
        choices=sorted(emulate_board.BOARDS),
        help="run the daemon as this board (scripts/bench/emulate_board.py; the pacer and the scoring run unthrottled)",
    )
    ap.add_argument(
        "--conditions",
        default="",
        help="comma list: clean, pauses, KIND-SNR, pauses-KIND-SNR, room, room-KIND-SNR (talkers at their "
        "natural levels), noise-KIND; 'all' = clean, pauses and every kind at every --snr (default)",
    )
    ap.add_argument("--kinds", default=",".join(la.KINDS), help="noise kinds for 'all' and noise alone")
    ap.add_argument("--snr", default=",".join(str(s) for s in la.SNRS), help="SNRs (dB) for 'all'")
    ap.add_argument("--utterances", type=int, default=25)
    ap.add_argument("--seed", type=int, default=9)
    ap.add_argument(
        "--speech-dbfs",
        type=float,
        default=la.SPEECH_DBFS,
        help="active speech level of every utterance (a far or quiet talker: -38)",
    )
    ap.add_argument("--noise-alone", action="store_true", help="also noise-KIND for every --kinds")
    ap.add_argument("--noise-minutes", type=float, default=10.0)
    ap.add_argument("--noise-speed", type=float, default=1.0, help="noise alone: play this many times real time")
    ap.add_argument("--quick", action="store_true", help="clean, pink-10, babble-10, pauses; 8 utterances")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="config override (TOML value; bare words are strings)",
    )
    ap.add_argument("--config-extra", metavar="FILE", help="TOML merged into the benchmark's config")
    ap.add_argument("--jobs", type=int, default=1, help="conditions run side by side (see docs/benchmarks.md)")
    ap.add_argument("--json", default=str(DEFAULT_JSON), help="results file (runs are merged into it)")
    ap.add_argument("--no-save", action="store_true")
    ap.add_argument("--keep-work", action="store_true", help="keep the work folder (daemon stderr per lane)")
    ap.add_argument("--write", metavar="MD", help="rewrite the live-noise section of this markdown file")
    ap.add_argument("--report-only", action="store_true", help="only --write from the saved results")
    args = ap.parse_args()

    if args.report_only:
        if args.write:
            report.write_markdown(Path(args.write), json.loads(Path(args.json).read_text()))
        print(report.targets_table(json.loads(Path(args.json).read_text())))
        return
    if not VOXNODE.exists():
        raise SystemExit(f"{VOXNODE} not found: run `make venv` first (the daemon runs from the project venv)")
    kinds = [k for k in args.kinds.split(",") if k]
    if args.quick:
        names, n_utts = ["clean", "pink-10", "babble-10", "pauses"], min(args.utterances, 8)
    else:
        n_utts = args.utterances
        names = []
        for c in (args.conditions or "all").split(","):
            if c == "all":
                names += ["clean", "pauses"] + [f"{k}-{s}" for k in kinds for s in args.snr.split(",") if s]
            elif c:
                names.append(c)
        if args.noise_alone:
            names += [f"noise-{k}" for k in kinds]
    conds = [la.Condition.parse(n) for n in names]
    sets = parse_sets(args.set)
    extra_text = Path(args.config_extra).read_text() if args.config_extra else ""
    label = args.label or "run"

    work = Path(tempfile.mkdtemp(prefix="voxnode-livebench-"))
    alsa_conf(work, max(1, args.jobs))
    print(f"building audio for {len(conds)} condition(s) (cached after the first run) ...", flush=True)
    tracks = {c.name: la.cached_track(c, n_utts, args.seed, args.noise_minutes * 60, args.speech_dbfs) for c in conds}
    print("transcribe reference (voxnode transcribe on each utterance cut from the same mix) ...", flush=True)
    speech_tracks = [t for t in tracks.values() if not t.condition.noise_alone]
    tr_config = work / "transcribe.toml"
    write_config(tr_config, "livebench0", extra_text, sets)
    tr = transcribe_cuts(speech_tracks, work, ac.cache_dir() / "live-noise-transcribe.json", tr_config)

    started = dt.datetime.now(dt.UTC)
    results: dict[str, dict] = {}
    lock = threading.Lock()

    def run_one(lane: int, c: la.Condition) -> None:
        cfg = work / f"lane{lane}.toml"
        write_config(cfg, f"livebench{lane}", extra_text, sets)
        t = tracks[c.name]
        load0 = loadavg()
        t0 = time.monotonic()
        speed = args.noise_speed if c.noise_alone else 1.0
        live = play_live(t, work, lane, cfg, speed, args.board)
        if c.noise_alone:
            res = score_noise_alone(t, live, speed)
        else:
            res = score_condition(t, live, [tr[(c.name, i)] for i in range(len(t.utts))])
        res.update(
            condition=c.name,
            kind=c.kind,
            snr=c.snr,
            wall_s=round(time.monotonic() - t0, 1),
            loadavg_before=load0,
            loadavg_after=loadavg(),
            lane=lane,
            jobs=args.jobs,
        )
        if live["daemon_rc"] not in (0, None):
            res["daemon_error"] = live["stderr_tail"]
        with lock:
            results[c.name] = res
            print(report.one_line(res), flush=True)

    queue = list(conds)
    qlock = threading.Lock()

    def lane_loop(lane: int) -> None:
        while True:
            with qlock:
                if not queue:
                    return
                c = queue.pop(0)
            run_one(lane, c)

    try:
        with ThreadPoolExecutor(max(1, args.jobs)) as pool:
            for f in [pool.submit(lane_loop, i) for i in range(max(1, args.jobs))]:
                f.result()
    finally:
        if args.keep_work:
            print(f"work files (daemon stderr, configs) kept in {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)

    git = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    run = {
        "label": label,
        "started": started.strftime("%Y-%m-%d %H:%M UTC"),
        "finished": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": git.stdout.strip(),
        "commands": [" ".join([".venv-bench/bin/python -m scripts.bench.live_noise", *sys.argv[1:]])],
        "settings": {**sets, **({"config_extra": extra_text} if extra_text else {})},
        "utterances": n_utts,
        "seed": args.seed,
        "speech_dbfs": args.speech_dbfs,
        "jobs": args.jobs,
        "machine": f"{os.cpu_count()} CPUs, {os.uname().machine}, shared",
        "conditions": {c.name: results[c.name] for c in conds if c.name in results},
    }
    if not args.no_save:
        path = Path(args.json)
        saved = json.loads(path.read_text()) if path.exists() else {"runs": {}}
        old = saved["runs"].get(label)
        if (
            old
            and old.get("utterances") == n_utts
            and old.get("seed") == args.seed
            and old.get("speech_dbfs", la.SPEECH_DBFS) == args.speech_dbfs
        ):
            # Same label: new conditions replace old ones, the others are kept (with their own loads).
            old["conditions"].update(run["conditions"])
            run["conditions"] = old["conditions"]
            run["started"] = old["started"]
            run["commands"] = old.get("commands", []) + [c for c in run["commands"] if c not in old.get("commands", [])]
        saved["runs"][label] = run
        path.write_text(json.dumps(saved, indent=1) + "\n")
        if args.write:
            report.write_markdown(Path(args.write), saved)
    print()
    print(report.results_table(run))
    print()
    print(report.targets_table({"runs": {label: run}}))


if __name__ == "__main__":
    main()
