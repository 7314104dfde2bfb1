"""End-of-turn model: from the sound of a pause, has the speaker finished? (Smart Turn v3.2 on LiteRT)

The speculative decode's text tells a finished sentence by its closing mark (stream/endpoint.py),
but Whisper is often unsure of the mark on a finished sentence (p 0.6-0.8), and card names, digits
and commands have none: those finals waited the full hangover. Pipecat's Smart Turn v3.2 (a
Whisper-tiny encoder fine-tuned on end-of-turn audio, pooled and classified: P(finished)) hears the
falling intonation and the final syllable's length. On the live-noise corpus (whole utterances vs
the same cut at a mid-sentence pause, scripts/bench/endpoint_verdicts.py) it separates them where the
closing mark cannot (measurements in config/vad.py at `end_of_turn_min_prob`).

`models/smart-turn-v3.2/smart_turn.tflite` (8.7 MB, int8 weights, float activations; found like
every model, models/find.py) is rebuilt from the ONNX file by scripts/convert/smart_turn.py and
runs wholly on XNNPACK: 28-37 ms per call on one x86 core here. `TurnModel` is one interpreter;
`TurnDetector` owns the one thread that runs it for every stream, beside the decode worker (the
second core is idle in a pause), so that the verdict is in before the speculative decode is.
"""

from __future__ import annotations

import logging
import statistics
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from voxnode.asr.mel import LogMel
from voxnode.audio.format import SAMPLE_RATE
from voxnode.errors import ModelError
from voxnode.lifecycle import Component
from voxnode.models.files import check_model_file
from voxnode.models.find import TURN_MODEL, TURN_MODEL_FILE, TURN_SETTING, find_model
from voxnode.models.interpreter import describe, open_interpreter
from voxnode.threads import NamedThread

log = logging.getLogger(__name__)

OWNER = TURN_SETTING
TURN_SECONDS = 8  # the model hears the last 8 s (400 encoder positions)
MEL_FRAMES = TURN_SECONDS * SAMPLE_RATE // 160


def turn_features(audio: np.ndarray, mel: LogMel) -> np.ndarray:
    """The model's input, [800, 80]: the Whisper log-mel of the last 8 s, zero-padded in front,
    after the waveform is normalised to zero mean and unit variance (its training front-end's
    do_normalize; so the input's scale does not matter)."""
    n = TURN_SECONDS * SAMPLE_RATE
    x = np.asarray(audio[-n:], dtype=np.float32)
    x = np.pad(x, (n - len(x), 0))
    x = (x - x.mean()) / np.sqrt(x.var() + 1e-7)
    return mel(x)[:MEL_FRAMES]


class TurnModel:
    """One interpreter of the end-of-turn model: audio ending at the pause -> P(finished)."""

    def __init__(self, model_dir: Path | None = None, num_threads: int = 1):
        model_dir = model_dir or find_model(TURN_MODEL, OWNER)
        path = model_dir / TURN_MODEL_FILE
        check_model_file(path, OWNER)  # the bytes are not kept: the interpreter maps the file
        # XNNPACK packs the weights; the file's mapped pages are then released (8 MB). Measured (one
        # stream, scripts/bench/stream.py): peak RSS +34 MB with the model loaded from bytes instead.
        opened = open_interpreter(OWNER, path=path, num_threads=num_threads, threads_name="xnn-turn")
        self._interp = opened.interpreter
        self.delegation = opened.delegation
        try:
            ins, outs = self._interp.get_input_details(), self._interp.get_output_details()
            self._in = next(d["index"] for d in ins if "mel" in d["name"])
            self._out = outs[0]["index"]
        except (ValueError, KeyError, RuntimeError, StopIteration) as e:
            raise ModelError(f"{OWNER}: {path} does not load ({type(e).__name__}: {e}); reinstall voxnode") from None
        self.mel = LogMel()

    def __call__(self, audio: np.ndarray) -> float:
        """16 kHz audio (any scale) whose end is the pause."""
        self._interp.set_tensor(self._in, turn_features(audio, self.mel)[None, None])
        self._interp.invoke()
        return float(self._interp.get_tensor(self._out).reshape(-1)[0])


# The model's answer can change a pause's end only while that pause lasts: asked at `vad.tail_ms` of
# silence, an answer later than `vad.hangover_ms` comes after every rule has ended the utterance. On the
# emulated Pi 4 (stop 48: this host's fractions, 4 threads, 25 real utterances) every one of 36 calls took
# 811 ms on the mean against the 600 ms a pause leaves it, no pause was ended by it, and its calls were
# ~22 % of the daemon's CPU. So where the recent answers come too late the model is not asked (the rules
# then decide as with the model off), except every PROBE_EVERY-th pause, which keeps the figure fresh.
RECENT_ANSWERS = 8  # the answers whose median is the model's answer time
MIN_ANSWERS = 3  # before this many the model is always asked
PROBE_EVERY = 16


class AnswerTimes:
    """How long the model's answers take (from the pause's question to its answer, the queue
    included), and whether a pause that can wait `budget_s` should ask it."""

    def __init__(self) -> None:
        self._recent: deque[float] = deque(maxlen=RECENT_ANSWERS)
        self._skipped = 0  # pauses not asked since the last question
        self.late = False  # the recent answers come after the budget
        self.declined = 0  # pauses not asked, in all
        self._budget_s: float | None = None  # what the latest pause could wait

    def answered(self, seconds: float) -> None:
        """One answer's time. While the answers are late, one in time (a probe's) drops the older ones:
        a board slow only for a while (a busy start) asks at every pause again after MIN_ANSWERS quick
        answers, not after a majority of the last RECENT_ANSWERS (RECENT_ANSWERS // 2 + 1 probes)."""
        if self.late and self._budget_s is not None and seconds <= self._budget_s:
            self._recent.clear()
        self._recent.append(seconds)

    def typical_s(self) -> float | None:
        return statistics.median(self._recent) if len(self._recent) >= MIN_ANSWERS else None

    def ask(self, budget_s: float) -> bool:
        self._budget_s = budget_s
        typical = self.typical_s()
        late = typical is not None and typical > budget_s
        if late != self.late:
            self.late = late
            if typical is not None and late:
                log.info(
                    "end-of-turn model: its answers take %.0f ms, after the %.0f ms a pause can wait for one: "
                    "asked at one pause in %d until they come in time",
                    1e3 * typical,
                    1e3 * budget_s,
                    PROBE_EVERY,
                )
            else:
                log.info("end-of-turn model: its answers come in time again; asked at every pause")
        if not late or self._skipped + 1 >= PROBE_EVERY:
            self._skipped = 0
            return True
        self._skipped += 1
        self.declined += 1
        return False


@dataclass
class TurnRequest:
    stream: str
    audio: np.ndarray
    on_done: Callable[[TurnRequest, float], None]  # called on the detector's thread
    tag: Any = None
    submitted: float = field(default_factory=time.monotonic)


class TurnDetector(Component):
    """Runs the end-of-turn model for every stream on one thread. A stream has at most one request
    waiting: a newer pause of the same stream replaces it (the older one's verdict would come too
    late to matter)."""

    def __init__(self, model: TurnModel | None = None):
        self._model = model
        self._cond = threading.Condition()
        self._pending: dict[str, TurnRequest] = {}
        self._thread: threading.Thread | None = None
        self._stopping = False
        self.calls = 0
        self.replaced = 0
        self.engine_s = 0.0
        self._times = AnswerTimes()

    def start(self) -> None:
        if self._model is None:
            self._model = TurnModel()
        log.info("end-of-turn model: Smart Turn v3.2, XNNPACK %s", describe(self._model.delegation))
        self._thread = NamedThread(target=self._run, name="turn-model", daemon=True)
        self._thread.start()

    def submit(self, request: TurnRequest) -> None:
        with self._cond:
            if self._stopping:
                return
            if request.stream in self._pending:
                self.replaced += 1
            self._pending[request.stream] = request
            self._cond.notify()

    def worth_asking(self, budget_s: float) -> bool:
        """Whether a pause that can wait `budget_s` for the answer should ask (AnswerTimes)."""
        with self._cond:
            return self._times.ask(budget_s)

    def cancel(self, stream: str) -> None:
        """Forget the stream's waiting request (speech resumed); one already running still reports."""
        with self._cond:
            self._pending.pop(stream, None)

    def _run(self) -> None:
        model = self._model
        assert model is not None
        while True:
            with self._cond:
                while not self._pending and not self._stopping:
                    self._cond.wait()
                if self._stopping:
                    return
                # Oldest first: every stream's pause waits at most one call per other stream.
                stream = min(self._pending, key=lambda s: self._pending[s].submitted)
                request = self._pending.pop(stream)
            t0 = time.monotonic()
            try:
                prob = model(request.audio)
            except Exception:  # a model failure must not stop endpoints: the text decides alone
                log.exception("stream %s: end-of-turn model failed", request.stream)
                continue
            done = time.monotonic()
            self.engine_s += done - t0
            self.calls += 1
            with self._cond:
                self._times.answered(done - request.submitted)
            request.on_done(request, prob)

    def stats(self) -> dict:
        d = self._model.delegation if self._model is not None else None
        with self._cond:  # the detector's thread adds answer times
            typical, declined = self._times.typical_s(), self._times.declined
        return {
            "xnnpack_all_ops": d is not None and d.applied and not d.not_delegated,
            "calls": self.calls,
            "replaced": self.replaced,
            "mean_ms": round(1e3 * self.engine_s / self.calls, 1) if self.calls else None,
            "answer_ms": None if typical is None else round(1e3 * typical, 1),
            "declined_late": declined,
        }

    def stop(self, deadline: float) -> None:
        """Waiting requests are dropped (the streams have stopped; their utterances end on the
        ordinary hangover); the call in progress finishes."""
        with self._cond:
            self._stopping = True
            self._pending.clear()
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(max(0.0, deadline - time.monotonic()))
            if self._thread.is_alive():
                log.warning("end-of-turn model: its thread did not stop in time")
