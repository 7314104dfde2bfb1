"""The KV-cached decoder graph: rows of tokens in, logits and their keys/values out.

One graph call takes N rows (token embedding + position row each), the cache
rows M it may attend to, an additive mask [N, M + N] saying which row sees
which, and a one-hot `pick` [K, N] of the rows whose logits are wanted. The
same graph serves the three uses:

- prefill: the start sequence (and a prompt) of one hypothesis, N tokens with
  a causal mask; logits at the <|startoftranscript|> row (no-speech
  probability) and at the last row (first text token). With a draft (the
  tokens a partial decoded a moment ago) after the start sequence, the same
  call also gives the logits after every draft token: the draft is verified
  in one call (asr/whisper/search.py, `verified_draft`);
- steps: N hypotheses (beams or samples), one new token each, over a cache
  that holds the shared prefill rows and every hypothesis's own rows;
- (verification) teacher forcing, one row at a time.

The token embedding exists once, as the weight of the tied output projection
inside the graph; input embeddings are read from that tensor.
"""

from __future__ import annotations

import os

import numpy as np

from voxnode.errors import ModelError
from voxnode.models.runtime import mapped_file_offset

EMPTY_SLOT = np.float32(-1e9)
# Cache capacities are rounded up to this many rows so that utterances of
# similar length reuse the interpreter's shapes (a new, larger shape costs an
# allocation of 15-30 ms; a shape within the arena already allocated ~1 ms).
ROWS_BUCKET = 16


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """Along the last axis."""
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def bucket(rows: int) -> int:
    return -(-rows // ROWS_BUCKET) * ROWS_BUCKET


class TokenEmbedding:
    """Rows of the output projection weight, dequantised on demand.

    The rows are read from the model file with pread() at the weight's offset, not through
    the interpreter's memory mapping: every row touched through the mapping stays in the
    process's RSS, and the kernel maps whole page-cache folios around it (measured: +12 MB of
    RSS during one beam-5 decode when the file's pages were in large folios, +0.2 MB with
    pread). Falls back to the mapping when the weight is not file-backed.
    """

    def __init__(self, interpreter, logits_index: int) -> None:
        fc = [
            op
            for op in interpreter._get_ops_details()
            if op["op_name"] == "FULLY_CONNECTED" and logits_index in op["outputs"]
        ]
        if not fc:
            raise ModelError("decoder model: no output projection feeding the logits")
        self.index = int(fc[0]["inputs"][1])
        self.it = interpreter
        details = interpreter._get_tensor_details(self.index, 0)
        quant = details["quantization_parameters"]
        self.scales = quant["scales"].astype(np.float32) if len(quant["scales"]) else None
        if self.scales is not None and len(quant["zero_points"]) and np.any(quant["zero_points"]):
            raise ModelError("decoder model: asymmetric embedding quantisation is not supported")
        weight = interpreter.tensor(self.index)()
        self.dtype, self.width = weight.dtype, int(weight.shape[1])
        located = mapped_file_offset(weight.__array_interface__["data"][0]) if weight.flags.c_contiguous else None
        del weight  # a held view would stop the interpreter from running
        # Open as long as the engine is: WhisperEngine.close() closes it (the engine decodes no more).
        self._file = open(located[0], "rb", buffering=0) if located else None  # noqa: SIM115 - closed by close()
        self._offset = located[1] if located else 0

    def close(self) -> None:
        if self._file is not None:
            self._file.close()

    def rows(self, tokens) -> np.ndarray:
        """[len(tokens), d_model] float32."""
        tokens = np.asarray(tokens, dtype=np.int64)
        if self._file is not None:
            size = self.width * self.dtype.itemsize
            fd = self._file.fileno()
            raw = b"".join(os.pread(fd, size, self._offset + int(t) * size) for t in tokens)
            out = np.frombuffer(raw, self.dtype).reshape(len(tokens), self.width).astype(np.float32)
        else:
            weight = self.it.tensor(self.index)()  # a fresh view each time, never held
            out = weight[tokens].astype(np.float32)
        if self.scales is not None:
            out *= (self.scales[tokens] if len(self.scales) > 1 else self.scales[0])[:, None]
        return out


class Prefix:
    """The prefill of one start sequence: its cache rows and the logit rows it gave.

    `first_logits` predicts the token after the last row. A prefill of a start sequence and a draft
    also holds `row_logits` [draft + 1, vocab]: row i predicts the token after the start and the
    draft's first i tokens (the last row is `first_logits`).
    """

    def __init__(
        self,
        keys: dict[str, np.ndarray],
        length: int,
        no_speech_logits: np.ndarray,
        first_logits: np.ndarray,
        row_logits: np.ndarray | None = None,
    ) -> None:
        self.keys = keys  # self_k_i / self_v_i: [heads, length, head_dim]
        self.length = length
        self.no_speech_logits = no_speech_logits
        self.first_logits = first_logits
        self.row_logits = first_logits[None] if row_logits is None else row_logits

    def cut(self, length: int) -> Prefix:
        """This prefix up to its first `length` rows (the start and the draft tokens accepted)."""
        first = len(self.row_logits) - 1 - (self.length - length)
        if not 0 <= first < len(self.row_logits):
            raise ValueError(f"cannot cut a prefix of {self.length} rows to {length}")
        keys = {name: arr[:, :length] for name, arr in self.keys.items()}
        return Prefix(keys, length, self.no_speech_logits, self.row_logits[first], self.row_logits[: first + 1])


class Hypotheses:
    """The cache of B hypotheses that share a prefix: [heads, P + B * cap, head_dim] per input.

    Rows 0..P-1 are the prefix (every hypothesis sees them); then `cap` rows per
    hypothesis, filled one step at a time. `reorder` makes hypothesis i a copy
    of hypothesis parents[i] (beam search keeps the best continuations).
    """

    def __init__(self, prefix: Prefix, n: int, cap: int, n_heads: int, head_dim: int) -> None:
        self.n, self.cap, self.p = n, cap, prefix.length
        self.length = 0  # generated rows filled per hypothesis
        rows = self.p + n * cap
        self.cache = {}
        for name, arr in prefix.keys.items():
            buf = np.zeros((n_heads, rows, head_dim), np.float32)
            buf[:, : self.p] = arr
            self.cache[name] = buf
        # What changed since the decoder last sent the cache to the interpreter (`sent`):
        # the slots appended since, or (after a reorder) every filled row.
        self._sent = False
        self._appended: list[int] = []
        self._reordered = False

    def rows_to_send(self) -> np.ndarray | None:
        """Buffer rows written since `sent()`, None when the whole cache must go (never sent, or
        new buffers): a step then copies those rows instead of the whole cache."""
        if not self._sent:
            return None
        slots = range(self.length) if self._reordered else self._appended
        starts = self.p + self.cap * np.arange(self.n)
        return (starts[:, None] + np.asarray(list(slots), dtype=np.int64)[None, :]).reshape(-1)

    def sent(self) -> None:
        self._sent, self._appended, self._reordered = True, [], False

    def own(self, name: str) -> np.ndarray:
        """View [heads, n, cap, head_dim] of the hypotheses' own rows."""
        buf = self.cache[name]
        return buf[:, self.p :].reshape(buf.shape[0], self.n, self.cap, buf.shape[2])

    def mask(self) -> np.ndarray:
        """[n, rows + n]: the prefix, the hypothesis's own filled rows, and its own new row."""
        rows = self.p + self.n * self.cap
        m = np.full((self.n, rows + self.n), EMPTY_SLOT, np.float32)
        m[:, : self.p] = 0.0
        for i in range(self.n):
            start = self.p + i * self.cap
            m[i, start : start + self.length] = 0.0
            m[i, rows + i] = 0.0
        return m

    def append(self, new: dict[str, np.ndarray]) -> None:
        """new: name -> [heads, n, head_dim], this step's keys/values of every hypothesis."""
        if self.length >= self.cap:
            raise ValueError("hypothesis cache is full")
        for name, arr in new.items():
            self.own(name)[:, :, self.length] = arr
        self._appended.append(self.length)
        self.length += 1

    def reorder(self, parents: list[int]) -> None:
        """Hypothesis i becomes a copy of hypothesis parents[i]; their number may change."""
        if list(parents) == list(range(self.n)):
            return
        idx = np.asarray(parents, dtype=np.int64)
        n = len(idx)
        for name, buf in list(self.cache.items()):
            own = self.own(name)[:, idx]
            if n != self.n:
                buf = np.empty((buf.shape[0], self.p + n * self.cap, buf.shape[2]), np.float32)
                buf[:, : self.p] = self.cache[name][:, : self.p]
                self.cache[name] = buf
            buf[:, self.p :] = own.reshape(buf.shape[0], n * self.cap, buf.shape[2])
        self._sent = self._sent and n == self.n  # new buffers go whole
        self._reordered = True
        self.n = n


class DecoderRunner:
    def __init__(self, interpreter, positions: np.ndarray, config: dict) -> None:
        self.it = interpreter
        self.positions = positions.astype(np.float32)
        self.n_layers = int(config["n_decoder_layers"])
        self.n_heads = int(config["n_heads"])
        self.head_dim = int(config["d_model"]) // self.n_heads
        sig = interpreter._get_full_signature_list().get("serving_default")
        if sig is None:
            raise ModelError("decoder model has no serving_default signature")
        self.inputs, self.outputs = sig["inputs"], sig["outputs"]
        missing = [n for n in ("x", "mask", "pick") if n not in self.inputs]
        if missing:
            raise ModelError(
                f"decoder model lacks inputs {missing}: convert it again (python -m scripts.convert.whisper.convert)"
            )
        if "logits" not in self.outputs:
            raise ModelError("decoder model lacks the output 'logits': not a Whisper decoder converted for voxnode")
        self.embedding = TokenEmbedding(interpreter, self.outputs["logits"])
        self.cache_names = [f"{kind}_{i}" for i in range(self.n_layers) for kind in ("self_k", "self_v")]
        self._shapes: dict[str, tuple[int, ...]] = {}
        self._cross: dict[str, np.ndarray] = {}
        self._cross_set = False
        self._holds: Hypotheses | None = None  # whose cache the cache inputs hold

    @property
    def max_positions(self) -> int:
        return len(self.positions)

    def close(self) -> None:
        """Close the model file the embedding rows are read from; no decode after this."""
        self.embedding.close()

    def set_audio(self, cross: dict[str, np.ndarray]) -> None:
        """The encoder's cross-attention K/V for the decodes that follow. They may be views of
        the encoder's output buffers (no copy): they are copied into the decoder's inputs at
        each (re)allocation, and held until the next set_audio ({} releases them, which the
        encoder needs before it runs again)."""
        self._cross = cross
        self._cross_set = False

    def _invoke(self, feeds: dict[str, np.ndarray], hyps: Hypotheses | None = None) -> None:
        """Set the inputs and run. `hyps`: a step's hypotheses, whose cache is an input too."""
        feeds = {**feeds, **self._cross, **(hyps.cache if hyps is not None else {})}
        changed = [name for name, arr in feeds.items() if self._shapes.get(name) != arr.shape]
        if changed:
            for name in changed:
                self.it.resize_tensor_input(self.inputs[name], list(feeds[name].shape))
                self._shapes[name] = feeds[name].shape
            self.it.allocate_tensors()
            self._cross_set = False  # the arena may have moved: set every input again
            self._holds = None
        # Inputs keep their contents between calls: the audio stays set, and when the cache
        # inputs already hold these hypotheses' cache, only the rows written since are copied
        # (a beam-3 step copied 8 x [6, ~80, 64] floats whole before).
        rows = hyps.rows_to_send() if hyps is not None and self._holds is hyps else None
        for name, arr in feeds.items():
            if self._cross_set and name.startswith("cross_"):
                continue
            if rows is not None and name in self.cache_names:
                continue
            self.it.set_tensor(self.inputs[name], arr)
        if rows is not None and len(rows):
            for name in self.cache_names:
                view = self.it.tensor(self.inputs[name])()  # a fresh view, dropped before invoke
                view[:, rows] = feeds[name][:, rows]
            del view
        self._holds = hyps
        if hyps is not None:
            hyps.sent()
        self._cross_set = True
        self.it.invoke()

    def _x(self, tokens, positions) -> np.ndarray:
        return self.embedding.rows(tokens) + self.positions[np.asarray(positions)]

    def prefill(self, tokens: list[int], sot_index: int, draft: int = 0) -> Prefix:
        """Run the start sequence (causal); logits at `sot_index` and at the last `draft + 1` rows
        (the last `draft` tokens are a draft to verify: Prefix.row_logits)."""
        n = len(tokens)
        if n > self.max_positions:
            raise ValueError(f"start sequence of {n} tokens exceeds the decoder's {self.max_positions} positions")
        if not 0 <= draft < n - sot_index:
            raise ValueError(f"a draft of {draft} tokens does not fit a start sequence of {n}")
        empty = np.zeros((self.n_heads, 1, self.head_dim), np.float32)
        mask = np.full((n, 1 + n), EMPTY_SLOT, np.float32)
        mask[:, 1:][np.tril_indices(n)] = 0.0
        pick = np.zeros((2 + draft, n), np.float32)
        pick[0, sot_index] = 1.0
        pick[1 + np.arange(draft + 1), np.arange(n - 1 - draft, n)] = 1.0
        self._invoke(
            {"x": self._x(tokens, range(n)), "mask": mask, "pick": pick, **{name: empty for name in self.cache_names}}
        )
        logits = self.it.get_tensor(self.outputs["logits"])
        keys = {name: self.it.get_tensor(self.outputs["new_" + name[len("self_") :]]) for name in self.cache_names}
        return Prefix(keys, n, logits[0], logits[-1], logits[1:])

    def forced_logits(self, tokens: list[int]) -> np.ndarray:
        """Teacher forcing in one call: the logits [len(tokens), vocab] after each token (verification)."""
        n = len(tokens)
        empty = np.zeros((self.n_heads, 1, self.head_dim), np.float32)
        mask = np.full((n, 1 + n), EMPTY_SLOT, np.float32)
        mask[:, 1:][np.tril_indices(n)] = 0.0
        self._invoke(
            {
                "x": self._x(tokens, range(n)),
                "mask": mask,
                "pick": np.eye(n, dtype=np.float32),
                **{name: empty for name in self.cache_names},
            }
        )
        return self.it.get_tensor(self.outputs["logits"])

    def hypotheses(self, prefix: Prefix, n: int, max_new_tokens: int) -> Hypotheses:
        cap = bucket(min(max_new_tokens, self.max_positions - prefix.length))
        return Hypotheses(prefix, n, cap, self.n_heads, self.head_dim)

    def step(self, hyps: Hypotheses, tokens: list[int]) -> np.ndarray:
        """Feed each hypothesis its latest token; returns logits [n, vocab] and appends to the cache."""
        pos = hyps.p + hyps.length
        if pos >= self.max_positions:
            raise ValueError("decoder positions exhausted")
        x = self._x(tokens, [pos] * len(tokens))
        self._invoke({"x": x, "mask": hyps.mask(), "pick": np.eye(hyps.n, dtype=np.float32)}, hyps)
        logits = self.it.get_tensor(self.outputs["logits"])
        hyps.append(
            {name: self.it.get_tensor(self.outputs["new_" + name[len("self_") :]]) for name in self.cache_names}
        )
        return logits
