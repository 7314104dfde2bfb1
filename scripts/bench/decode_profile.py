"""Where one final's decode spends its CPU, call by call (issue 23, fourth pass).

Each real utterance (scripts/bench/speech_corpus.py, clean) is decoded as the daemon decodes it at
the end of speech (as scripts/bench/drafts.py): a greedy partial of all but the last `--lag`
seconds gives the draft; a partial of that audio runs just before the final (as live: the final
starts in the shapes the partial left); then the final (the configured beam, 3, with the draft)
is profiled. Every timed span records the CPU of the process (all inference threads) and of the
calling thread (`time.thread_time`), inclusive and exclusive of the spans inside it:

- `encode` (zero padding, log-mel) > `encoder` (set the inputs, invoke);
- `prefill` (the start sequence and the draft in one call) and each `step` of the search, each
  split into the interpreter's `invoke`, `set_tensor` (inputs copied in: the hypotheses' cache,
  the mask, the cross-attention keys and values after a reallocation), `get_tensor` (outputs
  copied out), `allocate` (resize + allocate_tensors on a new shape) and the Python around them;
- the search's own Python: `logprobs` (suppressed tokens, log-softmax), `candidates` (each
  hypothesis's best tokens), `verify` (the draft's check) and the rest (`search`: bookkeeping).

It prints per thread count the median over utterances (per final, ms of host CPU) and per call,
the number of tail steps, and a Pi 4 estimate (host CPU / `--pi4-fraction`: 0.09 here, the lead's
calibration of this host on 2026-12-05; an estimate, since it models neither memory bandwidth nor
NEON against this host's AVX-512 VNNI/AMX kernels). Each final's tokens are saved, and a run can be
compared token for token with an earlier label (`--same-as LABEL`): a change that should not
change the text must say "0 differ". `--rows` times one decoder call alone as its rows grow
(1, 3, 5, 16 hypotheses; logits for one row or all): what a call costs whatever its rows.

    nice -n 19 .venv-bench/bin/python -m scripts.bench.decode_profile --threads 1 2 --label before
    nice -n 19 .venv-bench/bin/python -m scripts.bench.decode_profile --rows    # one call by its rows

Process CPU is fair under `nice` on a shared host; wall time is not (printed for reference only).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from scripts import RESULTS, command_line

PI4_FRACTION = 0.09  # share of one core of this host per Pi 4 core (the lead's calibration, 2026-12-05)
INTERPRETER_CALLS = {
    "invoke": "invoke",
    "set_tensor": "set_tensor",
    "get_tensor": "get_tensor",
    "resize_tensor_input": "allocate",
    "allocate_tensors": "allocate",
}


class Profiler:
    """Nested spans: for each path of span names, calls and CPU (process, thread), inclusive and exclusive."""

    def __init__(self) -> None:
        self.on = False
        self.stack: list[list] = []  # [name, proc0, thread0, child_proc, child_thread]
        self.totals: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0, 0.0, 0.0])
        self.steps: list[tuple[float, float]] = []  # each step's (process CPU, invoke's process CPU)

    def reset(self) -> None:
        self.totals.clear()
        self.steps = []

    @contextlib.contextmanager
    def span(self, name: str):
        if not self.on:
            yield
            return
        frame = [name, time.process_time(), time.thread_time(), 0.0, 0.0]
        self.stack.append(frame)
        try:
            yield
        finally:
            proc, thread = time.process_time() - frame[1], time.thread_time() - frame[2]
            self.stack.pop()
            key = "/".join(f[0] for f in self.stack) + "/" + name if self.stack else name
            t = self.totals[key]
            t[0] += 1
            t[1] += proc
            t[2] += thread
            t[3] += proc - frame[3]
            t[4] += thread - frame[4]
            if self.stack:
                self.stack[-1][3] += proc
                self.stack[-1][4] += thread

    def wrap(self, owner, attr: str, name: str) -> None:
        """Time every call of owner.attr (a class's method or a module's function) as span `name`."""
        original = getattr(owner, attr, None)
        if original is None:
            return
        prof = self

        def timed(*a, **kw):
            if not prof.on:
                return original(*a, **kw)
            with prof.span(name):
                return original(*a, **kw)

        setattr(owner, attr, timed)


class TimedInterpreter:
    """The decoder's interpreter with its calls timed (every other attribute passed through)."""

    def __init__(self, it, prof: Profiler) -> None:
        self._it, self._prof = it, prof

    def __getattr__(self, attr):
        value = getattr(self._it, attr)
        name = INTERPRETER_CALLS.get(attr)
        if name is None:
            return value

        if not self._prof.on:
            return value

        def timed(*a, **kw):
            with self._prof.span(name):
                return value(*a, **kw)

        return timed


def instrument(prof: Profiler) -> None:
    """Wrap the engine's classes and functions (once per process: every engine loaded after shares them)."""
    from voxnode.asr.whisper import decoder, encoder, search
    from voxnode.asr.whisper import engine as engine_mod
    from voxnode.asr.whisper.token_rules import TokenRules

    prof.wrap(engine_mod.WhisperEngine, "_encode", "encode")
    prof.wrap(encoder.EncoderRunner, "run", "encoder")
    prof.wrap(decoder.DecoderRunner, "prefill", "prefill")
    prof.wrap(search, "verified_draft", "verify")
    prof.wrap(search, "beam_search", "search")
    prof.wrap(TokenRules, "logprobs", "logprobs")
    prof.wrap(search, "_candidates", "candidates")
    step = decoder.DecoderRunner.step

    def timed_step(self, *a, **kw):
        if not prof.on:
            return step(self, *a, **kw)
        before = prof.totals["search/step/invoke"][1]
        c0 = time.process_time()
        with prof.span("step"):
            out = step(self, *a, **kw)
        prof.steps.append((time.process_time() - c0, prof.totals["search/step/invoke"][1] - before))
        return out

    decoder.DecoderRunner.step = timed_step


def measure(
    threads: int,
    prof: Profiler,
    n_asterisk: int,
    lag_s: float,
    repeat: int,
    limit: int | None,
    model_dir: Path | None = None,
) -> dict:
    """Per utterance: `repeat` finals timed whole (process CPU, wall; the median kept), each after
    a partial (greedy) of the head, timed too, then one final profiled."""
    from scripts.bench import speech_corpus
    from scripts.bench.drafts import head_and_draft
    from scripts.bench.shortlist_decoder import load_engine
    from voxnode.asr import default_model_dir

    engine = load_engine(model_dir or default_model_dir(None, "tiny.en"), threads)
    engine._decoder.it = TimedInterpreter(engine._decoder.it, prof)
    engine._encoder.it = TimedInterpreter(engine._encoder.it, prof)
    utts = speech_corpus.real_speech(n_asterisk=n_asterisk)[:limit]
    finals = []
    for u in utts:
        audio = (u.audio / 32768.0).astype(np.float32)
        head, draft = head_and_draft(engine, audio, lag_s)
        plain, partial = [], []
        for _ in range(repeat):
            c0 = time.process_time()
            engine.transcribe(head, role="partial")  # as live: a partial just before the final
            partial.append((time.process_time() - c0) * 1000)
            c0, w0 = time.process_time(), time.perf_counter()
            r = engine.transcribe(audio, role="final", draft=draft)
            plain.append(((time.process_time() - c0) * 1000, (time.perf_counter() - w0) * 1000))
        engine.transcribe(head, role="partial")
        prof.reset()
        prof.on = True
        c0 = time.process_time()
        profiled = engine.transcribe(audio, role="final", draft=draft)
        cpu = time.process_time() - c0
        prof.on = False
        finals.append(
            {
                "name": u.name,
                "duration_s": round(len(audio) / 16000, 2),
                "tokens": r.tokens,
                "profiled_tokens_same": profiled.tokens == r.tokens,
                "text": r.text,
                "draft_tokens": r.draft_tokens,
                "draft_accepted": r.draft_accepted,
                "cpu_ms": round(float(np.median([c for c, _ in plain])), 3),
                "wall_ms": round(float(np.median([w for _, w in plain])), 3),
                "partial_cpu_ms": round(float(np.median(partial)), 3),
                "profiled_cpu_ms": round(cpu * 1000, 3),
                # each span: calls, then ms of process and thread CPU inclusive, then exclusive
                "spans": {k: [v[0], *(round(x * 1000, 4) for x in v[1:])] for k, v in prof.totals.items()},
                "steps_ms": [(round(a * 1000, 4), round(b * 1000, 4)) for a, b in prof.steps],
            }
        )
    engine.close()  # main measures each thread count with an engine of its own
    return {"threads": threads, "finals": finals}


def invoke_by_rows(threads: int, reps: int = 200, model_dir: Path | None = None) -> list[str]:
    """A step's invoke alone, as the rows (hypotheses) and the logit rows grow: what the call costs
    whatever its rows. A real recording encoded in the 6 s window, a 5-token prefix, 16 rows each."""
    from scripts.bench import speech_corpus
    from scripts.bench.shortlist_decoder import load_engine
    from voxnode.asr import default_model_dir

    engine = load_engine(model_dir or default_model_dir(None, "tiny.en"), threads)
    engine._encode((speech_corpus.pocketsphinx()[0].audio[:80000] / 32768.0).astype(np.float32), 6.0)
    dec = engine._decoder
    start = engine.start_sequence()
    prefix = dec.prefill([*start.tokens, 383, 318, 257], start.sot_index)
    lines = [
        f"{threads} thread(s), one decoder call, {reps} times (ms per call, process / calling thread CPU):",
        "| rows | logit rows | process CPU | thread CPU |",
        "|---|---|---|---|",
    ]
    for n, k in ((1, 1), (3, 1), (3, 3), (5, 1), (5, 5), (16, 1), (16, 16)):
        hyps = dec.hypotheses(prefix, n, 16)
        x = dec._x([262] * n, [prefix.length] * n)
        dec._invoke({"x": x, "mask": hyps.mask(), "pick": np.eye(n, dtype=np.float32)[:k]}, hyps)
        c0, t0 = time.process_time(), time.thread_time()
        for _ in range(reps):
            dec.it.invoke()
        proc, thread = (time.process_time() - c0) / reps * 1000, (time.thread_time() - t0) / reps * 1000
        lines.append(f"| {n} | {k} | {proc:.2f} | {thread:.2f} |")
    engine.close()
    return lines


def summary(run: dict, fraction: float) -> list[str]:
    finals = run["finals"]
    keys = sorted({k for f in finals for k in f["spans"]})

    def med(vals) -> float:
        return float(np.median(vals)) if len(vals) else 0.0

    cpu = np.array([f["cpu_ms"] for f in finals])
    steps = [s for f in finals for s in f["steps_ms"]]
    n_steps = [len(f["steps_ms"]) for f in finals]
    lines = [
        f"{run['threads']} thread(s), {len(finals)} finals: process CPU per final median / p95 {med(cpu):.1f} / "
        f"{np.percentile(cpu, 95):.1f} ms (Pi 4 estimate {med(cpu) / fraction:.0f} / "
        f"{np.percentile(cpu, 95) / fraction:.0f} ms); wall median {med([f['wall_ms'] for f in finals]):.1f} ms; "
        f"profiled {med([f['profiled_cpu_ms'] for f in finals]):.1f} ms CPU",
        f"tail steps per final median {med(n_steps):.0f} (p95 {np.percentile(n_steps, 95):.0f}); per step: "
        f"process CPU {med([s[0] for s in steps]):.2f} ms, of it invoke {med([s[1] for s in steps]):.2f} "
        f"(Pi 4 estimate {med([s[0] for s in steps]) / fraction:.1f} ms per step)",
        "",
        "| span (exclusive of the spans inside it) | calls per final | process CPU ms per final, median "
        "| per call | thread CPU ms per final | Pi 4 estimate ms per final |",
        "|---|---|---|---|---|---|",
    ]
    for k in keys:
        rows = [f["spans"].get(k, [0, 0, 0, 0, 0]) for f in finals]
        calls = med([r[0] for r in rows])
        excl = med([r[3] for r in rows])
        per_call = med([r[3] / r[0] for r in rows if r[0]])
        lines.append(
            f"| {k} | {calls:.0f} | {excl:.2f} | {per_call:.3f} | {med([r[4] for r in rows]):.2f} "
            f"| {excl / fraction:.1f} |"
        )
    return lines


def main() -> int:
    from scripts.bench.machine import describe, load

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--asterisk", type=int, default=40, help="Asterisk prompts in the corpus (plus pocketsphinx)")
    p.add_argument("--limit", type=int, default=None, help="only the first N utterances")
    p.add_argument("--lag", type=float, default=1.2, help="seconds of the end the last partial did not hear")
    p.add_argument("--repeat", type=int, default=3, help="unprofiled finals per utterance (median CPU kept)")
    p.add_argument("--pi4-fraction", type=float, default=PI4_FRACTION)
    p.add_argument("--model-dir", type=Path, default=None, help="the model (default: the shipped tiny.en)")
    p.add_argument("--label", default="x86")
    p.add_argument("--same-as", default=None, help="compare each final's tokens with this earlier label's")
    p.add_argument("--json", type=Path, default=RESULTS / "decode_profile.json")
    p.add_argument("--no-write", action="store_true")
    p.add_argument("--rows", action="store_true", help="only time one decoder call by its rows (nothing saved)")
    args = p.parse_args()
    if args.rows:
        for threads in args.threads:
            print("\n".join(invoke_by_rows(threads, model_dir=args.model_dir)) + "\n", flush=True)
        print(load())
        return 0
    saved = json.loads(args.json.read_text()) if args.json.exists() else {}
    if args.same_as is not None and args.same_as not in saved:
        p.error(f"--same-as {args.same_as!r}: no such label in {args.json} (known: {sorted(saved)})")
    load_before = load()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    runs = {}
    prof = Profiler()
    instrument(prof)
    for threads in args.threads:
        run = measure(threads, prof, args.asterisk, args.lag, args.repeat, args.limit, args.model_dir)
        runs[str(threads)] = run
        print("\n".join(summary(run, args.pi4_fraction)), flush=True)
        if args.same_as is not None:
            earlier = saved[args.same_as]["runs"].get(str(threads))
            if earlier is None:
                print(f"(no {threads}-thread run under {args.same_as!r} to compare with)")
            else:
                old = {f["name"]: f["tokens"] for f in earlier["finals"]}
                differ = [f["name"] for f in run["finals"] if f["name"] in old and old[f["name"]] != f["tokens"]]
                print(f"tokens against {args.same_as!r}: {len(differ)} of {len(run['finals'])} differ {differ}")
        print(flush=True)
    record = {
        "measured": started,
        "machine": describe(),
        "load": [load_before, load()],
        "command": command_line(),
        "lag_s": args.lag,
        "pi4_fraction": args.pi4_fraction,
        "runs": runs,
    }
    print(f"{record['machine']}; {load_before} before, {record['load'][1]} after")
    if not args.no_write:
        saved[args.label] = record
        args.json.write_text(json.dumps(saved, separators=(",", ":")) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
