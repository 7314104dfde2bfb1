"""How well the speculative decode's text tells a finished sentence from a fragment.

For every utterance of the live-noise corpus (scripts/bench/speech_corpus.py: pocketsphinx-testdata +
Asterisk prompts, as scripts/bench/sim_live.py and scripts/bench/live_noise.py use it): the whole
utterance, and (over 2 s of speech) its first part cut at the quietest point between 30 % and
70 % of the speech (where a speaker would pause mid-sentence), each followed by `vad.tail_ms` of
silence and decoded as the pipeline's speculative final is. Prints each verdict
(stream/endpoint.py) and how many of each kind a closing mark of probability >= p calls finished.

    PYTHONPATH=daemon .venv/bin/python -m scripts.bench.endpoint_verdicts [--tail-ms 100] [--noise pink --snr 10]

`--turn-model litert` also asks the daemon's end-of-turn model (`vad.end_of_turn`, Pipecat's Smart
Turn v3.2 rebuilt for LiteRT: stream/turn.py) and prints how the closing-mark rule and the model
combine; `--dump` writes every cut's figures. The last table counts the cuts on which both say
finished (`vad.agreed_end_*`): whole / fragment, per bar of each. `--turn-model auto` (benchmark venv: needs
onnxruntime) asks the ONNX original instead (BSD-2-Clause, taken from the `pipecat-ai` wheel on
PyPI with `pip download --no-deps`; only its ONNX file is read), to compare the rebuild with it:

    PYTHONPATH=daemon .venv-bench/bin/python -m scripts.bench.endpoint_verdicts --turn-model litert|auto
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np

from scripts.bench import audio_corpus as ac
from scripts.bench import speech_corpus as sc
from scripts.bench import turn_window
from scripts.bench.sim_live import FRAME, RATE, trim
from voxnode.stream.endpoint import Completion, judge
from voxnode.stream.turn import TurnModel, turn_features
from voxnode.text import clean_text

THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.9)
TURN_SOURCE = "pipecat-ai==1.14.0"
TURN_ONNX = "pipecat/audio/turn/smart_turn/data/smart-turn-v3.2-cpu.onnx"
TURN_SECONDS = 8
TURN_SURE = 0.9  # the model's probability that overrides a missing or hesitant closing mark
TURN_ALONE = 0.95  # ... and the bar when it decides alone (a closing mark, if any, only needs p >= 0.5)
AGREED_MARK = (0.0, 0.5, 0.8)  # the text's and the model's bars where both must say finished
AGREED_TURN = (0.5, 0.8, 0.9, 0.95, 0.98)


class OnnxTurnModel:
    """Smart Turn v3.2 on onnxruntime (the file we convert from): audio -> P(the speaker has finished)."""

    def __init__(self, path: Path) -> None:
        import onnxruntime as ort

        from voxnode.asr.mel import LogMel

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = opts.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(path), sess_options=opts)
        self.mel = LogMel()

    def __call__(self, audio: np.ndarray) -> float:
        features = turn_features(audio, self.mel).T[None]  # [1, 80, 800]
        return float(np.asarray(self.session.run(None, {"input_features": features})[0]).reshape(-1)[0])


def corpus_cuts(tail_ms: int, noise: str | None = None, snr: float = 10.0, asterisk: int = 15):
    """(utterance, "whole" or "fragment", audio at int16 scale): every utterance of the live-noise
    corpus at -26 dBFS, and (over 2 s of speech) its part up to the mid-sentence quiet point, each
    followed by `tail_ms` of silence; with `noise` (a scripts/bench/audio_corpus.py kind) mixed in at `snr`."""
    tail = np.zeros(tail_ms * RATE // 1000, np.float32)
    for k, u in enumerate(sc.real_speech(n_asterisk=asterisk, seed=0)):
        clip, s0, s1 = trim(ac.at_dbfs(u.audio, -26))
        ends = [("whole", s1)] + ([("fragment", fragment_end(clip, s0, s1))] if s1 - s0 >= 2 * RATE else [])
        for kind, end in ends:
            audio = np.concatenate([clip[:end], tail])
            if noise:
                audio = ac.mix(audio, ac.noise(noise, len(audio), seed=k), snr)
            yield u, kind, audio


def fetch_turn_model(cache: Path) -> Path:
    onnx = cache / Path(TURN_ONNX).name
    if onnx.exists():
        return onnx
    cache.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", TURN_SOURCE, "-d", str(cache)], check=True
    )
    wheel = sorted(cache.glob("pipecat_ai-*.whl"))[-1]
    with zipfile.ZipFile(wheel) as z:
        onnx.write_bytes(z.read(TURN_ONNX))
    return onnx


def fragment_end(clip: np.ndarray, s0: int, s1: int) -> int:
    """The quietest 60 ms between 30 % and 70 % of the speech (sim_live.split_pause's choice)."""
    lv = ac.frame_levels_db(clip)
    lo, hi = (s0 + int(0.3 * (s1 - s0))) // FRAME, (s0 + int(0.7 * (s1 - s0))) // FRAME
    smooth = np.convolve(lv, np.ones(3) / 3, mode="same")
    return (lo + int(np.argmin(smooth[lo:hi]))) * FRAME


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tail-ms", type=int, default=100)
    ap.add_argument("--asterisk", type=int, default=15)
    ap.add_argument("--noise", help="mix this noise kind (scripts/bench/audio_corpus.py) into every clip")
    ap.add_argument("--snr", type=float, default=10.0)
    ap.add_argument(
        "--turn-model",
        help='"litert" (the daemon\'s: vad.end_of_turn), "auto" (the ONNX original from the pipecat-ai wheel, '
        "on onnxruntime) or an ONNX path",
    )
    ap.add_argument(
        "--turn-min-seconds",
        type=int,
        nargs="*",
        default=[],
        help="also ask the model with the window shortened to the cut's length rounded up to whole seconds, "
        "at least each of these (scripts/bench/turn_window.py), and compare its calls with 8 s",
    )
    ap.add_argument(
        "--turn-window",
        type=Path,
        default=turn_window.DEFAULT_DIR,
        help="the variable-window graph for --turn-min-seconds (scripts.convert.smart_turn --window --out DIR)",
    )
    ap.add_argument("--dump", type=Path, help="write every cut's verdict, closing-mark p and turn p (JSON)")
    args = ap.parse_args()
    turn = None
    if args.turn_model:
        if args.turn_model == "litert":
            turn = TurnModel()
        else:
            auto = args.turn_model == "auto"
            turn = OnnxTurnModel(fetch_turn_model(ac.cache_dir() / "smart-turn") if auto else Path(args.turn_model))
    from voxnode.asr import default_model_dir
    from voxnode.asr.whisper.engine import WhisperEngine

    engine = WhisperEngine.load(default_model_dir(), 1)
    probs: dict[str, list[float | None]] = {"whole": [], "fragment": []}
    # per cut: (turn model, closing-mark p if the text ends a sentence, clearly open, closing-mark p)
    turns: dict[str, list[tuple[float, float | None, bool, float | None]]] = {"whole": [], "fragment": []}
    dump = []
    # per minimum window: per kind, (P at 8 s, P at the shortened window, closing-mark p, clearly open)
    short: dict[int, dict[str, list[tuple[float, float, float | None, bool]]]] = {
        m: {"whole": [], "fragment": []} for m in args.turn_min_seconds
    }
    if short and not isinstance(turn, TurnModel):
        ap.error("--turn-min-seconds needs --turn-model litert")
    window = turn_window.WindowTurnModel(args.turn_window) if short else None
    for u, kind, audio in corpus_cuts(args.tail_ms, args.noise, args.snr, args.asterisk):
        r = engine.transcribe(audio / 32768.0)
        text = clean_text(r.text)
        verdict = judge(text, r.stop_reason == "eot", None)  # the mark alone; probability below
        p = r.punctuation_prob if verdict == Completion.SENTENCE_END else None
        probs[kind].append(p)
        shown = "-" if r.punctuation_prob is None else f"{r.punctuation_prob:.2f}"
        turn_shown = ""
        if turn is not None:
            q = turn(audio / 32768.0)
            turns[kind].append((q, p, verdict == Completion.OPEN, r.punctuation_prob))
            turn_shown = f"turn={q:.2f} "
            for m, rows in short.items():
                assert window is not None
                q_m = window(audio / 32768.0, turn_window.window_seconds(len(audio), m))
                rows[kind].append((q, q_m, p, verdict == Completion.OPEN))
                turn_shown += f"min{m}s={q_m:.2f} "
        print(f"{kind:8s} p={shown:4s} {turn_shown}{verdict.value:12s} {text}", flush=True)
        dump.append(
            {
                "name": u.name,
                "kind": kind,
                "text": text,
                "verdict": verdict.value,
                "mark_p": r.punctuation_prob,
                "turn_p": turns[kind][-1][0] if turn is not None else None,
                "turn_p_min_s": {m: rows[kind][-1][1] for m, rows in short.items()},
            }
        )
    if args.dump:
        args.dump.write_text(json.dumps(dump, indent=1))
    print()
    print("| kind | n | " + " | ".join(f"finished at p >= {t}" for t in THRESHOLDS) + " |")
    print("|---|---|" + "---|" * len(THRESHOLDS))
    for kind, ps in probs.items():
        counts = [sum(1 for p in ps if p is not None and p >= t) for t in THRESHOLDS]
        print(f"| {kind} | {len(ps)} | " + " | ".join(str(c) for c in counts) + " |")
    if turn is not None:
        print()
        print(
            f"| kind | n | closing mark p >= 0.8 | turn model >= 0.5 | turn model >= {TURN_ALONE}, not clearly open, "
            f"a closing mark (if any) p >= 0.5 | mark p >= 0.8, or turn model >= {TURN_SURE} unless clearly open |"
        )
        print("|---|---|---|---|---|---|")
        for kind, rows in turns.items():
            mark = sum(1 for _, p, _, _ in rows if p is not None and p >= 0.8)
            half = sum(1 for q, _, _, _ in rows if q >= 0.5)
            alone = sum(
                1 for q, _, is_open, raw in rows if q >= TURN_ALONE and not is_open and (raw is None or raw >= 0.5)
            )
            both = sum(
                1 for q, p, is_open, _ in rows if (p is not None and p >= 0.8) or (q >= TURN_SURE and not is_open)
            )
            print(f"| {kind} | {len(rows)} | {mark} | {half} | {alone} | {both} |")
        print_agreed(turns)
    if short:
        print_short(short)


def print_agreed(turns: dict[str, list[tuple[float, float | None, bool, float | None]]]) -> None:
    """Whole / fragment cuts on which the text and the model agree (vad.agreed_end_*): a closing mark
    of p >= m (the text not clearly open) and the model's P(finished) >= q."""
    print()
    print("| closing mark p >= | " + " | ".join(f"and turn >= {q}" for q in AGREED_TURN) + " |")
    print("|---|" + "---|" * len(AGREED_TURN))
    for m in AGREED_MARK:
        cells = []
        for q in AGREED_TURN:
            n = {k: sum(1 for t, p, _, _ in rows if p is not None and p >= m and t >= q) for k, rows in turns.items()}
            cells.append(f"{n['whole']} / {n['fragment']}")
        print(f"| {m} | " + " | ".join(cells) + " |")


def print_short(short: dict[int, dict[str, list[tuple[float, float, float | None, bool]]]]) -> None:
    """Whole / fragment called finished at 8 s and with the shortened window: by the model alone
    (P >= TURN_SURE), by the end_of_turn rule (closing mark p >= 0.8, or the model unless the text is
    clearly open) and by the agreed-end rule (mark p >= 0.8 and the model >= TURN_SURE); and how
    many of the model's calls at TURN_SURE change."""

    def called(rows, i: int) -> tuple[int, int, int]:
        alone = sum(1 for r in rows if r[i] >= TURN_SURE)
        rule = sum(1 for r in rows if (r[2] is not None and r[2] >= 0.8) or (r[i] >= TURN_SURE and not r[3]))
        agreed = sum(1 for r in rows if r[2] is not None and r[2] >= 0.8 and r[i] >= TURN_SURE)
        return alone, rule, agreed

    print()
    print(
        f"| window | whole: model >= {TURN_SURE} / end_of_turn rule / agreed | fragment: the same "
        "| model's calls changed (whole, fragment) | max and median abs(P - P at 8 s) |"
    )
    print("|---|---|---|---|---|")
    first = next(iter(short.values()))
    cells = [" / ".join(str(c) for c in called(first[k], 0)) for k in ("whole", "fragment")]
    print(f"| 8 s (today) | {cells[0]} | {cells[1]} | - | - |")
    for m, by_kind in short.items():
        cells = [" / ".join(str(c) for c in called(by_kind[k], 1)) for k in ("whole", "fragment")]
        changed = [sum(1 for r in by_kind[k] if (r[0] >= TURN_SURE) != (r[1] >= TURN_SURE)) for k in by_kind]
        d = np.array([abs(r[0] - r[1]) for rows in by_kind.values() for r in rows])
        print(
            f"| length rounded up, >= {m} s | {cells[0]} | {cells[1]} | {changed[0]}, {changed[1]} "
            f"| {d.max():.3f}, {np.median(d):.3f} |"
        )


if __name__ == "__main__":
    main()
