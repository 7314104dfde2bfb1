"""Does the end-of-turn model, run beside the pause's decode, slow the final? (issue 23, stop 39)

At a pause the daemon starts the speculative final and asks Smart Turn at the same moment
(stream/utterances.py). On a 4-core board whose engine runs 4 threads the two compete for the cores;
asking the model only where the text cannot tell would keep it out of the decode's way. This
measures what there is to win: each real utterance (scripts/bench/speech_corpus.py, clean) is decoded
as the daemon decodes its final (a greedy partial of all but the last second gives the draft and runs
just before), once alone and once with the end-of-turn model started on another thread at the same
moment, in alternating order; it prints the finals' median wall time both ways, the median of the
paired differences, and the model's own time alone and beside. Run it under a board's emulation:

    EMULATE_BOARD_FRACTIONS="pi4=0.09" python scripts/bench/emulate_board.py pi4 -- \\
        .venv-bench/bin/python -m scripts.bench.turn_overlap --threads 4

Wall times: on a shared host compare only the paired figures of one run.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time

import numpy as np


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=4, help="the engine's inference threads")
    ap.add_argument("--asterisk", type=int, default=20, help="Asterisk prompts in the corpus")
    ap.add_argument("--lag", type=float, default=1.0, help="seconds the draft's partial misses")
    args = ap.parse_args()

    from scripts.bench import speech_corpus
    from voxnode.asr import default_model_dir
    from voxnode.asr.whisper.engine import WhisperEngine
    from voxnode.stream.turn import TurnModel

    engine = WhisperEngine.load(default_model_dir(None, "tiny.en"), args.threads)
    turn = TurnModel()
    times: dict[str, list[float]] = {"alone": [], "beside": [], "turn_alone": [], "turn_beside": []}
    for k, u in enumerate(speech_corpus.real_speech(n_asterisk=args.asterisk)):
        audio = (u.audio / 32768.0).astype(np.float32)
        head = audio[: max(16000, len(audio) - int(args.lag * 16000))]
        draft = engine.transcribe(head, role="partial").tokens
        t0 = time.perf_counter()
        turn(audio)
        times["turn_alone"].append(time.perf_counter() - t0)
        for mode in ("alone", "beside") if k % 2 else ("beside", "alone"):
            engine.transcribe(head, role="partial")  # as live: the final starts where a partial left it
            helper = None
            if mode == "beside":
                done: dict[str, float] = {}

                def ask(done: dict[str, float] = done, audio: np.ndarray = audio) -> None:
                    s = time.perf_counter()
                    turn(audio)
                    done["s"] = time.perf_counter() - s

                helper = threading.Thread(target=ask)
                helper.start()
            t0 = time.perf_counter()
            engine.transcribe(audio, role="final", draft=draft)
            times[mode].append(time.perf_counter() - t0)
            if helper is not None:
                helper.join()
                times["turn_beside"].append(done["s"])
        print(f"{k:3d} {u.name:40s} alone {times['alone'][-1] * 1e3:4.0f} ms, beside {times['beside'][-1] * 1e3:4.0f}")

    def ms(x: np.ndarray | list[float]) -> int:
        return round(float(np.median(x)) * 1e3)

    diff = np.array(times["beside"]) - np.array(times["alone"])
    summary = {
        "threads": args.threads,
        "utterances": len(diff),
        "final_alone_p50_ms": ms(times["alone"]),
        "final_beside_turn_p50_ms": ms(times["beside"]),
        "paired_diff_p50_ms": ms(diff),
        "turn_alone_p50_ms": ms(times["turn_alone"]),
        "turn_beside_p50_ms": ms(times["turn_beside"]),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
