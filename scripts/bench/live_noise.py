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

# Its parts: live_noise_audio.py (the recordings), live_noise_config.py (the daemon's and ALSA's config),
# live_noise_run.py (voxnode run and transcribe), live_noise_score.py (the figures of one run),
# live_noise_report.py (the tables); this module runs the conditions and saves the results.

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from scripts import REPO as ROOT
from scripts import RESULTS
from scripts.bench import audio_corpus as ac
from scripts.bench import emulate_board
from scripts.bench import live_noise_audio as la
from scripts.bench import live_noise_report as report
from scripts.bench.live_noise_config import alsa_conf, spool_path, write_config
from scripts.bench.live_noise_run import VOXNODE, play_live, transcribe_cuts
from scripts.bench.live_noise_score import score_condition, score_noise_alone
from scripts.bench.machine import describe
from scripts.bench.settings import parse_sets

DEFAULT_JSON = RESULTS / "live_noise_benchmark.json"


def loadavg() -> list[float]:
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


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
        spool_path(cfg).unlink(missing_ok=True)  # each condition starts with an empty spool
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
        "machine": describe(),
        "board": args.board,
        # of a host core per board core: the stock table's, or this host's from EMULATE_BOARD_FRACTIONS
        "board_fraction": emulate_board.BOARDS[args.board].fraction,
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
