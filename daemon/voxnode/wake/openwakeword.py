"""openWakeWord's models on voxnode's runtime (LiteRT + XNNPACK): the second opinion of `wake.confirm`.

openWakeWord (github.com/dscripka/openWakeWord; code Apache-2.0, **its pre-trained models CC BY-NC-SA
4.0: non-commercial**) is three models: a mel spectrogram (32 bands, 25 ms windows every 10 ms),
Google's speech embedding (76 mel frames -> 96 features, one every 8 mel frames = 80 ms) and a
small head per word (16 embeddings = 1.28 s -> one probability). voxnode ships none of them: the
user installs the `pyopen-wakeword` package (Apache-2.0 code; the .tflite files inside it carry
the models' licence), and only its model files are read; its bundled TFLite library is not used.
Its streaming pipeline (pyopen_wakeword/openwakeword.py) is reproduced exactly but batched:

- audio arrives in 1280-sample chunks (80 ms); its stream starts with 8 s of zeros (autofill);
- mel window k is samples [1280 k, 1280 k + 1760) of that stream, 8 mel frames each, scaled
  x / 10 + 2; one window per call (the model clamps to 80 dB under the loudest value of its
  whole input, so a batch of windows would not give the streaming values);
- embedding e is mel frames [8 e, 8 e + 76); probability s is the head on embeddings [s, s + 16).

Every window is a pure function of the audio under it, so the probabilities are the same computed
chunk by chunk or over a buffer at once (within 3.1e-6 of pyopen-wakeword's own library on 5
recordings: `python -m scripts.bench.wake_oww --check`).
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

import numpy as np

from voxnode.config.wording import key_value, toml_value
from voxnode.errors import ConfigError
from voxnode.models.interpreter import open_interpreter
from voxnode.models.runtime import Delegation
from voxnode.regular_file import check_regular_file

KEY, NAME = "wake.confirm", "openwakeword"
INSTALL = "pip install pyopen-wakeword; its models are CC BY-NC-SA 4.0, non-commercial use only"
CHUNK = 1280  # samples per 80 ms step
MEL_SAMPLES = 1760  # one mel window: the chunk and 480 samples (3 hops) before it
MELS_PER_CHUNK = 8
EMB_WINDOW = 76  # mel frames per embedding
EMB_STEP = 8  # mel frames between embeddings (one per chunk)
HEAD_WINDOW = 16  # embeddings per probability
AUTOFILL_CHUNKS = 100  # pyopen-wakeword's 8 s of zeros before the first chunk
# Zeros before the audio: enough that no probability after the audio's first chunk reads a window that
# is not all zeros in both (the head reaches back 15 embeddings, an embedding 10 mel windows).
PAD_CHUNKS = 32
# What XNNPACK leaves to the builtin kernels (measured, ai-edge-litert 2.3.0): the mel model's
# EXPAND_DIMS / SQUEEZE around its two convolutions, shape changes that copy no more than the frame;
# the embedding (64 ops) and the alexa head (5) are delegated whole.
BUILTIN_OPS = frozenset(("EXPAND_DIMS", "SQUEEZE"))
BATCH = 16  # embedding windows per interpreter call (its output does not depend on the batch; a short clip pads little)


def models_dir() -> Path:
    """The .tflite files inside the installed pyopen-wakeword package (not imported: only its files)."""
    spec = importlib.util.find_spec("pyopen_wakeword")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"{KEY} = {toml_value(NAME)}: the pyopen-wakeword package is not installed ({INSTALL})")
    return Path(next(iter(spec.submodule_search_locations))) / "models"


def model_files(word: str = "alexa", folder: Path | None = None) -> tuple[Path, Path, Path]:
    """The mel, embedding and `word` head files (in the installed package unless `folder`), each there
    and readable, or ConfigError naming wake.confirm. Nothing is loaded: check-config and reloads
    (voxnode.preflight) ask this, as OwwScorer does before it loads them."""
    folder = folder or models_dir()
    paths = (folder / "melspectrogram.tflite", folder / "embedding_model.tflite", folder / f"{word}.tflite")
    for path in paths:
        # The guard of every file a user names, for these package files too: the interpreter opens each by
        # its path, which waits on a FIFO (the open checked here does not, and names it as one).
        try:
            check_regular_file(path, f"{KEY} = {toml_value(NAME)}: {path}")
        except ConfigError as e:
            raise ConfigError(f"{e} (reinstall: {INSTALL})") from None
    return paths


class OwwScorer:
    """The three models on LiteRT with XNNPACK (one thread); `probabilities` scores a whole signal."""

    def __init__(self, folder: Path | None = None, word: str = "alexa", xnnpack: bool = True):
        """Raises ConfigError (naming wake.confirm) when the package or a model file is missing."""
        mel, emb, head = model_files(word, folder)
        self.delegation: dict[str, Delegation] = {}
        # One window per call: the mel model clamps to 80 dB under the loudest value of its whole input
        # (REDUCE_MAX, torchaudio's top_db), so a batch of windows would not give the streaming values.
        self._mel = self._open(mel, "mel", [1, MEL_SAMPLES], xnnpack)
        self._emb = self._open(emb, "embedding", [BATCH, EMB_WINDOW, 32, 1], xnnpack)
        self._head = self._open(head, word, None, xnnpack)

    def _open(self, path: Path, name: str, shape: list[int] | None, xnnpack: bool):
        """open_interpreter's, sized before the tensors are allocated: the mel model's input is (-1, -1),
        which XNNPACK cannot prepare at its stored (1, 1)."""
        opened = open_interpreter(
            key_value(KEY, NAME),
            path=path,
            xnnpack=xnnpack,
            builtin_ops=BUILTIN_OPS,
            input_shape=shape,
            advice=f"reinstall: {INSTALL}",
        )
        self.delegation[name] = opened.delegation
        return opened.interpreter

    @staticmethod
    def _run(it, x: np.ndarray, batch: int) -> np.ndarray:
        """x: (N, ...) through an interpreter sized for `batch` rows (the last batch padded)."""
        inp, out = it.get_input_details()[0]["index"], it.get_output_details()[0]["index"]
        parts = []
        for i in range(0, len(x), batch):
            b = x[i : i + batch]
            if len(b) < batch:
                b = np.concatenate([b, np.zeros((batch - len(b), *b.shape[1:]), dtype=b.dtype)])
            it.set_tensor(inp, np.ascontiguousarray(b, dtype=np.float32))
            it.invoke()
            parts.append(it.get_tensor(out).reshape(batch, -1)[: len(x) - i].copy())
        return np.concatenate(parts) if parts else np.zeros((0, 1), np.float32)

    def mels(self, stream: np.ndarray) -> np.ndarray:
        """(frames, 32): every mel window of `stream` (float32 samples, already padded), in order."""
        n = (len(stream) - MEL_SAMPLES) // CHUNK + 1
        if n <= 0:
            return np.zeros((0, 32), np.float32)
        idx = np.arange(n)[:, None] * CHUNK + np.arange(MEL_SAMPLES)[None, :]
        m = self._run(self._mel, stream[idx], 1)  # (n, 8 * 32)
        return (m.reshape(n * MELS_PER_CHUNK, 32) / 10.0 + 2.0).astype(np.float32)

    def embeddings(self, mels: np.ndarray) -> np.ndarray:
        n = (len(mels) - EMB_WINDOW) // EMB_STEP + 1
        if n <= 0:
            return np.zeros((0, 96), np.float32)
        idx = np.arange(n)[:, None] * EMB_STEP + np.arange(EMB_WINDOW)[None, :]
        return self._run(self._emb, mels[idx][..., None], BATCH)  # (n, 96)

    def heads(self, emb: np.ndarray) -> np.ndarray:
        n = len(emb) - HEAD_WINDOW + 1
        if n <= 0:
            return np.zeros(0, np.float32)
        idx = np.arange(n)[:, None] + np.arange(HEAD_WINDOW)[None, :]
        return self._run(self._head, emb[idx], 1)[:, 0]

    def probabilities(self, audio: np.ndarray, pad_chunks: int = PAD_CHUNKS) -> tuple[np.ndarray, np.ndarray]:
        """int16-scaled samples (starting on a chunk of the stream) -> (probability per 80 ms, the 20 ms
        frame of `audio` after which a stream has it). `pad_chunks` of zeros go first; probabilities
        before the audio's first chunk are dropped."""
        x = np.concatenate([np.zeros(pad_chunks * CHUNK, np.float32), np.asarray(audio, np.float32)])
        p = self.heads(self.embeddings(self.mels(x)))
        frames = known_after(np.arange(len(p)), pad_chunks)
        keep = frames >= 0
        return p[keep].astype(np.float32), frames[keep].astype(np.int32)


def known_after(s: np.ndarray, pad_chunks: int) -> np.ndarray:
    """The 20 ms frame (of the audio, 0 = its first) after which streaming pyopen-wakeword has yielded
    probability s: the last mel window it needs, k = s + 15 + 9, ends at sample 1280 k + 1760 of the
    padded stream, which arrives with the chunk holding that sample."""
    k = s + HEAD_WINDOW - 1 + (EMB_WINDOW - 1) // MELS_PER_CHUNK
    end = k * CHUNK + MEL_SAMPLES - pad_chunks * CHUNK  # samples of the audio needed
    chunk = -(-end // CHUNK)  # chunks of audio that hold them
    return chunk * 4 - 1  # the chunk's last 20 ms frame
