"""A microWakeWord detector for one stream, on the LiteRT interpreter the engine already loads.

Features: the TFLite Micro audio front-end (40 log-mel channels, 30 ms windows every 10 ms, with
its noise reduction and PCAN gain control), through `pymicro_features`, the compiled front-end the
models were trained with; microWakeWord models need exactly these features.

Model: a streaming int8 network that keeps its own state in resource variables; it takes 3 feature
frames per call (30 ms) and returns one probability. Detection: the mean of the last `window`
probabilities exceeds the manifest's cutoff, as in ESPHome and pymicro-wakeword.

Kernels: XNNPACK (one thread) by default. Measured on the four shipped models (x86, loaded
2-core machine): 18-37 us per model call against 64-165 us for LiteRT's built-in kernels, which
is most of the detector's cost (the front-end is ~27 us per 10 ms). The built-in kernels give
probabilities bit-identical to pymicro-wakeword's own TFLite library; XNNPACK's differ by at most
0.012 on the same clips. The false-accept and acceptance figures (docs/benchmarks.md#wake-word)
are measured with both; `xnnpack=False` gives the reference kernels.

Second opinion (`wake.confirm`, confirm.py): a word the model scores above confirm.ARM_CUTOFF is also
accepted when openWakeWord's model for it agrees (alexa only; off by default).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

import numpy as np

from voxnode.errors import ModelError
from voxnode.models.interpreter import open_interpreter

from .confirm import WORDS, SecondOpinion
from .models import WakeModel

FEATURE_STEP_MS = 10  # the micro front-end's hop: one feature frame per 160 samples
_HOP_BYTES = 160 * 2
_INT8 = (-128, 127)
_FEATURES = 40  # log-mel channels per feature frame: a model's input is (1, frames, 40) int8


# What XNNPACK leaves to the builtin kernels in the shipped models (measured on all four): the
# streaming state (resource variables) and the int8 input's slicing; the convolutions are delegated.
BUILTIN_OPS = frozenset(
    ("VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE", "CALL_ONCE", "QUANTIZE", "SPLIT_V", "STRIDED_SLICE")
)


def _interpreter(model: WakeModel, xnnpack: bool):
    return open_interpreter(
        model.setting,
        content=model.content(),
        label=str(model.tflite),
        xnnpack=xnnpack,
        builtin_ops=BUILTIN_OPS,
        advice=model.advice,
    ).interpreter


class _Scorer:
    """One model: its interpreter (which keeps the model's streaming state) and sliding window."""

    def __init__(self, model: WakeModel, refractory_frames: int, xnnpack: bool, second: SecondOpinion | None = None):
        self.model = model
        self.second = second if model.name in WORDS else None  # wake.confirm
        self._it = _interpreter(model, xnnpack)
        inp, out = self._it.get_input_details()[0], self._it.get_output_details()[0]
        self._in_index, self._out_index = inp["index"], out["index"]
        self._in_scale, self._in_zero = inp["quantization"]
        self._out_scale, self._out_zero = out["quantization"]
        self._in_dtype = inp["dtype"]
        # Another model's .tflite (Silero VAD's: (1, 576) float) loaded, and the stream's first frame
        # ended its thread with "Cannot set tensor: Dimension mismatch" (stop 46): refused at load.
        shape = tuple(int(n) for n in inp["shape"])
        if len(shape) != 3 or shape[2] != _FEATURES or self._in_dtype != np.int8:
            said = f"{model.setting}: {model.tflite} takes {shape} {np.dtype(self._in_dtype).name}, not (1, n, 40) int8"
            raise ModelError(f"{said} features: not a microWakeWord model" + ("; " + model.advice) * model.shipped)
        self.stride = shape[1]  # feature frames per call
        self._probs: deque[float] = deque(maxlen=model.window)
        self._refractory = refractory_frames
        self.quiet = 0  # feature frames left in the refractory period
        self.last_probability = 0.0
        self.peak_probability = 0.0
        self.mean: float | None = None  # this hop's mean, if the model made a call with a full window

    def score(self, features: list[list[float]]) -> float | None:
        x = np.asarray(features, dtype=np.float32)[np.newaxis]  # (1, stride, 40)
        q = np.clip(np.round(x / self._in_scale + self._in_zero), *_INT8).astype(self._in_dtype)
        self._it.set_tensor(self._in_index, q)
        self._it.invoke()
        y = self._it.get_tensor(self._out_index)
        self._probs.append((float(y.reshape(-1)[0]) - self._out_zero) * self._out_scale)
        if len(self._probs) < self._probs.maxlen:  # type: ignore[operator]
            return None
        mean = sum(self._probs) / len(self._probs)
        self.mean = mean
        self.last_probability = mean
        self.peak_probability = max(self.peak_probability, mean)
        if mean <= self.model.cutoff or self.quiet:
            return None
        return self.fire(mean)

    def fire(self, mean: float) -> float:
        # One word, one detection: the window starts afresh, and nothing fires for the refractory period.
        self._probs.clear()
        self.quiet = self._refractory
        self.peak_probability = 0.0
        if self.second is not None:
            self.second.reset()
        return mean


class WakeDetector:
    """Feed it 16 kHz int16 audio in any block size; `process` says when a wake word was heard.

    Several models listen at once on one front-end (the features are the same for every
    microWakeWord model): the front-end's cost is paid once, each model adds its own call.
    `heard` names the model that fired in the last `process` call that returned a probability."""

    def __init__(
        self,
        models: WakeModel | Sequence[WakeModel],
        refractory_ms: int = 0,
        xnnpack: bool = True,
        second: SecondOpinion | None = None,
    ):
        """`second`: openWakeWord's second chance for the models in confirm.WORDS (wake.confirm)."""
        from pymicro_features import MicroFrontend

        models = (models,) if isinstance(models, WakeModel) else tuple(models)
        if not models:
            raise ValueError("a wake detector needs at least one model")
        self._frontend = MicroFrontend()
        self._scorers = [_Scorer(m, refractory_ms // FEATURE_STEP_MS, xnnpack, second) for m in models]
        self._second = second if any(s.second is not None for s in self._scorers) else None
        self.models = models
        self.model = models[0]
        self.heard: WakeModel = models[0]
        self._features: list[list[float]] = []  # the latest feature frames, as many as the longest call takes
        self._keep = max(s.stride for s in self._scorers)
        self._fed = 0  # feature frames so far
        self._buf = b""

    @property
    def last_probability(self) -> float:
        """The latest averaged probability (diagnostics, benchmarks): the highest of the models'."""
        return max(s.last_probability for s in self._scorers)

    @property
    def peak_probability(self) -> float:
        return max(s.peak_probability for s in self._scorers)

    def process(self, samples: np.ndarray) -> float | None:
        """int16 samples -> the averaged probability if a wake word was detected in them, else None."""
        self._buf += np.asarray(samples, dtype="<i2").tobytes()
        hit: float | None = None
        used = 0
        while len(self._buf) - used >= _HOP_BYTES:
            out = self._frontend.process_samples(self._buf[used : used + _HOP_BYTES])
            if self._second is not None:
                self._second.feed(np.frombuffer(self._buf[used : used + out.samples_read * 2], dtype="<i2"))
            used += out.samples_read * 2
            if not out.features:
                if self._second is not None:
                    for s in self._scorers:
                        s.mean = None
                    hit = self._second_chance(hit)
                continue
            self._features.append(out.features)
            self._fed += 1
            for s in self._scorers:
                s.mean = None
                if s.quiet:
                    s.quiet -= 1
                if self._fed % s.stride == 0:
                    p = s.score(self._features[-s.stride :])
                    if p is not None and (hit is None or p > hit):
                        hit, self.heard = p, s.model
            if self._second is not None:
                hit = self._second_chance(hit)
            if len(self._features) > self._keep:
                del self._features[: -self._keep]
        self._buf = self._buf[used:]
        return hit

    def _second_chance(self, hit: float | None) -> float | None:
        """wake.confirm, after each 10 ms hop: openWakeWord's word on what microWakeWord scored under its
        cutoff (the detection's probability is microWakeWord's mean then)."""
        for s in self._scorers:
            if s.second is None:
                continue
            if not s.second.step(s.mean) or hit is not None or s.quiet:
                continue
            self.heard = s.model
            return s.fire(s.last_probability)
        return hit
