"""Benchmark-only: run a decoder whose logits cover a shortlist of the vocabulary (issue 23) in
the daemon's engine, without the daemon knowing about shortlists.

scripts/convert/whisper/shortlist.py writes such a model: the decoder's output projection cut to
the kept ids' rows, and beside it vocab_shortlist.npy (the kept ids), token_embedding.npy and
token_embedding_scales.npy (the full input embedding table, which the daemon reads from the
projection), named in model_config.json's `vocab_shortlist`. `adopt` rewires a loaded engine:
the decoder's interpreter hands out its logits mapped back to full-vocabulary ids (-inf at every id
left out), so the search, the token rules and the tokenizer run unchanged, and its input
embeddings come from the table beside the model. The mapping adds ~one row copy per call.

Runtime support in the daemon (the files checked in the manifest, a converter option, unit tests)
would wait on a shortlist that keeps the WER (docs/benchmarks.md "Decoder logits over a vocabulary
shortlist"); none did, so it was not kept.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from scripts.convert.whisper.shortlist import CONFIG_KEY

MAX_RUNS = 16  # above this many runs of consecutive ids, one indexed copy is cheaper than a copy per run


class Shortlist:
    """The kept ids as runs of consecutive ids: expanding a row is one slice copy per run ("every id
    below K, then the special tokens": two), or one indexed copy when the runs are many (a word list's
    ids: thousands; 4 ms a call run by run)."""

    def __init__(self, ids: np.ndarray, vocab_size: int) -> None:
        ids = np.asarray(ids, np.int64)
        if ids.ndim != 1 or not len(ids) or np.any(np.diff(ids) <= 0) or ids[0] < 0 or ids[-1] >= vocab_size:
            raise ValueError(f"shortlist ids must rise strictly within the vocabulary of {vocab_size}")
        self.ids, self.vocab_size = ids, vocab_size
        breaks = np.flatnonzero(np.diff(ids) != 1) + 1
        starts, ends = np.concatenate([[0], breaks]), np.concatenate([breaks, [len(ids)]])
        self.runs = [(int(ids[a]), int(a), int(b - a)) for a, b in zip(starts, ends, strict=True)]

    def expand(self, logits: np.ndarray) -> np.ndarray:
        """[rows, len(ids)] -> [rows, vocab], -inf at every id not kept."""
        out = np.full((*logits.shape[:-1], self.vocab_size), -np.inf, np.float32)
        if len(self.runs) > MAX_RUNS:
            out[..., self.ids] = logits
            return out
        for first, column, length in self.runs:
            out[..., first : first + length] = logits[..., column : column + length]
        return out


class TableEmbedding:
    """DecoderRunner.embedding's `rows` from the table beside the model (mapped; the daemon reads
    its projection's rows with pread instead, which only its RSS would tell apart)."""

    def __init__(self, table: Path, scales: Path | None) -> None:
        self.table = np.load(table, mmap_mode="r")
        self.scales = None if scales is None else np.load(scales).astype(np.float32)

    def close(self) -> None:
        """Nothing to close: the mapping goes with the array (DecoderRunner.close calls it)."""

    def rows(self, tokens) -> np.ndarray:
        tokens = np.asarray(tokens, dtype=np.int64)
        out = np.asarray(self.table[tokens], np.float32)
        if self.scales is not None:
            out *= self.scales[tokens][:, None]
        return out


class ExpandingInterpreter:
    """The decoder's interpreter, its logits output mapped back to the full vocabulary."""

    def __init__(self, it, logits_index: int, shortlist: Shortlist) -> None:
        self._it, self._logits, self._shortlist = it, logits_index, shortlist

    def get_tensor(self, index, *a):
        out = self._it.get_tensor(index, *a)
        return self._shortlist.expand(out) if index == self._logits else out

    def __getattr__(self, attr):
        return getattr(self._it, attr)


def entry_of(model_dir: Path) -> dict | None:
    return json.loads((Path(model_dir) / "model_config.json").read_text()).get(CONFIG_KEY)


def adopt(engine, model_dir: Path) -> bool:
    """Rewire `engine` (loaded from `model_dir`) for its shortlist; False when it has none."""
    entry = entry_of(model_dir)
    if entry is None:
        return False
    root = Path(model_dir)
    dec = engine._decoder
    vocab = int(json.loads((root / "model_config.json").read_text())["vocab_size"])
    shortlist = Shortlist(np.load(root / entry["ids"]), vocab)
    scales = entry.get("embedding_scales")
    dec.embedding.close()  # the projection's pread file, read no more
    dec.embedding = TableEmbedding(root / entry["embedding"], None if scales is None else root / scales)
    dec.it = ExpandingInterpreter(dec.it, dec.outputs["logits"], shortlist)
    return True


def load_engine(model_dir: Path, threads: int, **kw):
    """WhisperEngine.load, and `adopt` when the model has a shortlist."""
    from voxnode.asr.whisper.engine import WhisperEngine

    engine = WhisperEngine.load(model_dir, threads, **kw)
    adopt(engine, model_dir)
    return engine


class DoubtInterpreter:
    """A two-stage decoder simulated on the full one: the logits over the shortlist `ids`, and the
    full vocabulary's only on the calls where a row is in doubt (its most likely kept text token
    has a probability under `tau` among the kept text tokens). A runtime would compute the other
    ids' logits in a second, small graph (the rest of the projection, on the same hidden state, so
    the same values bit for bit); this gives its transcripts and how often it would run
    (`calls`, `doubt_calls`, `rows`, `doubt_rows`)."""

    def __init__(self, it, logits_index: int, ids: np.ndarray, first_special: int, tau: float) -> None:
        self._it, self._logits, self._tau = it, logits_index, tau
        self._ids = np.asarray(ids, np.int64)
        self._text = self._ids[self._ids < first_special]
        self.calls = self.doubt_calls = self.rows = self.doubt_rows = 0

    def get_tensor(self, index, *a):
        out = self._it.get_tensor(index, *a)
        if index != self._logits:
            return out
        text = out[:, self._text]
        best = 1.0 / np.exp(text - text.max(axis=1, keepdims=True)).sum(axis=1)
        doubt = best < self._tau
        self.calls += 1
        self.rows += len(out)
        self.doubt_calls += bool(doubt.any())
        self.doubt_rows += int(doubt.sum())
        kept = np.full_like(out, -np.inf)
        kept[:, self._ids] = out[:, self._ids]
        return np.where(doubt[:, None], out, kept)

    def __getattr__(self, attr):
        return getattr(self._it, attr)


def adopt_doubt(engine, spec: str) -> DoubtInterpreter:
    """`spec` "K:TAU" (e.g. "16384:0.8"): the ids below K and the special tokens, full logits in doubt."""
    from scripts.convert.whisper.shortlist import kept_ids

    below, tau = spec.split(":")
    dec = engine._decoder
    first_special = engine._rules.first_special
    ids = kept_ids(len(engine._rules.suppress), int(below), engine._rules.eot)
    dec.it = DoubtInterpreter(dec.it, dec.outputs["logits"], ids, first_special, float(tau))
    return dec.it
