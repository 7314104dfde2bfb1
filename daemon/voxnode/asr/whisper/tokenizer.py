"""Whisper's byte-level BPE (GPT-2 style): token ids <-> text.

vocabulary.txt holds one token per line (line number = id), written with
GPT-2's byte-to-printable-character map; decoding maps each character back to
its byte and decodes the bytes as UTF-8.

Encoding (for prompts and hotwords only) splits the text with GPT-2's
pre-tokenizer pattern, starts from one token per byte and applies the ranked
merges of merges.npy (50000 (left, right, merged) token-id triples, from the
source model's tokenizer.json), lowest rank first. The merges are loaded the
first time a text is encoded, as two sorted arrays (1 MB; the same table as
Python dictionaries of strings took 23 MB).
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import numpy as np

from voxnode.errors import ModelError


def _printable_to_byte() -> dict[str, int]:
    # GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves,
    # the rest are shifted to code points 256 and up, in byte order.
    keep = (
        list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    )
    table = {chr(b): b for b in keep}
    shifted = 0
    for b in range(256):
        if b not in keep:
            table[chr(256 + shifted)] = b
            shifted += 1
    return table


# GPT-2's pre-tokenizer, r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+",
# written for the standard `re` module: letters are [^\W\d_] and numbers \d. The two differ
# only for numeric characters that are not decimal digits ("²", "½"), which `re` counts as
# letters; tests/asr check the encoder against the reference tokenizer on English text.
PRETOKENIZE = re.compile(r"'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+")
# What closes a sentence: ".", "?" or "!", possibly followed by closing quotes. The pre-tokenizer
# never mixes punctuation with letters or digits, so such a mark is a token of its own ("." or
# '."'); an ellipsis ("...", "…") trails off and does not count. Other languages' marks count too
# ("。", "？", "！", Arabic "؟", Devanagari "।"), but only where the mark is one token ("。" and "؟" are
# in Whisper's vocabulary); one spelled in byte tokens ("？", "।") is taken as it is (None).
SENTENCE_END = ".?!\u3002\uff1f\uff01\u061f\u0964"
CLOSING_QUOTES = "\"'\u201d\u2019\u00bb"


class Tokenizer:
    def __init__(self, tokens: list[str], eot: int, merges: Path | None = None) -> None:
        self.tokens = tokens
        self.eot = eot
        self._to_byte = _printable_to_byte()
        self._merges_path = merges
        self._pair_keys: np.ndarray | None = None  # left * PAIR + right, sorted
        self._pair_merged: np.ndarray | None = None  # merged token id per key (its rank orders the merges)
        self._pair_rank: np.ndarray | None = None
        self._byte_ids: list[int] = []

    PAIR = 1 << 20  # > vocabulary size: left * PAIR + right is a unique key

    @classmethod
    def from_file(cls, path: Path, eot: int, merges: Path | None = None) -> Tokenizer:
        tokens = Path(path).read_text(encoding="utf-8").split("\n")
        if tokens and tokens[-1] == "":
            tokens.pop()
        if len(tokens) <= eot:
            raise ModelError(f"{path}: {len(tokens)} tokens, expected more than {eot}")
        return cls(tokens, eot, merges)

    def special(self, name: str) -> int:
        """Id of a special token such as "<|startofprev|>"."""
        try:
            return self.tokens.index(name, self.eot)
        except ValueError:
            raise ModelError(f"vocabulary has no {name} token") from None

    def _load_merges(self) -> None:
        if self._merges_path is None:
            raise ModelError("this model has no merges.npy: prompts and hotwords cannot be encoded")
        try:
            table = np.load(self._merges_path)
        except (OSError, ValueError) as e:
            raise ModelError(f"{self._merges_path}: unreadable ({e})") from None
        if table.ndim != 2 or table.shape[1] != 3 or table.size == 0 or int(table.max()) >= len(self.tokens):
            raise ModelError(f"{self._merges_path}: not a [merges, 3] table of token ids")
        byte_ids: dict[int, int] = {}
        for i, tok in enumerate(self.tokens[: self.eot]):
            if len(tok) == 1 and tok in self._to_byte:
                byte_ids.setdefault(self._to_byte[tok], i)
        if len(byte_ids) != 256:
            raise ModelError("vocabulary lacks single-byte tokens: not a byte-level BPE vocabulary")
        keys = table[:, 0].astype(np.int64) * self.PAIR + table[:, 1]
        order = np.argsort(keys)
        self._pair_keys = keys[order]
        self._pair_merged = table[order, 2].astype(np.int32)
        self._pair_rank = order.astype(np.int32)
        del table, keys, order
        self._byte_ids = [byte_ids[b] for b in range(256)]

    def _bpe(self, ids: list[int]) -> list[int]:
        keys, merged, rank = self._pair_keys, self._pair_merged, self._pair_rank
        assert keys is not None and merged is not None and rank is not None
        while len(ids) > 1:
            arr = np.asarray(ids, dtype=np.int64)
            pairs = arr[:-1] * self.PAIR + arr[1:]
            pos = np.minimum(np.searchsorted(keys, pairs), len(keys) - 1)
            known = keys[pos] == pairs
            if not known.any():
                break
            ranks = np.where(known, rank[pos], np.iinfo(np.int32).max)
            best = int(np.argmin(ranks))
            pair, new = int(pairs[best]), int(merged[pos[best]])
            out, i = [], 0
            while i < len(ids):
                if i + 1 < len(ids) and ids[i] * self.PAIR + ids[i + 1] == pair:
                    out.append(new)
                    i += 2
                else:
                    out.append(ids[i])
                    i += 1
            ids = out
        return ids

    def encode(self, text: str) -> list[int]:
        """Text -> token ids (text tokens only: "<|...|>" in the text is spelled out, not special)."""
        return list(self._encode(text))

    @lru_cache(maxsize=64)  # noqa: B019 - one tokenizer per engine, kept for the process's life
    def _encode(self, text: str) -> tuple[int, ...]:
        if self._pair_keys is None:
            self._load_merges()
        ids: list[int] = []
        for piece in PRETOKENIZE.findall(text):
            ids.extend(self._bpe([self._byte_ids[b] for b in piece.encode("utf-8")]))
        return tuple(ids)

    def decode_bytes(self, ids: list[int]) -> bytes:
        """Text tokens only: special and timestamp tokens (>= eot) are skipped."""
        chars = "".join(self.tokens[i] for i in ids if 0 <= i < self.eot)
        return bytes(self._to_byte.get(c, ord("?")) for c in chars)

    def decode(self, ids: list[int]) -> str:
        return self.decode_bytes(ids).decode("utf-8", errors="replace").strip()

    def closing_punctuation(self, ids: list[int]) -> int | None:
        """Index in `ids` of the token whose ".", "?" or "!" ends the decoded text (closing quotes
        may follow, in that token or after it), or None when the text does not end that way."""
        for i in range(len(ids) - 1, -1, -1):
            head = self.decode_bytes([ids[i]])
            if head and 0x80 <= head[0] < 0xC0:
                continue  # inside a character that an earlier token starts (U+201D is 2 tokens)
            tail = self.decode_bytes(ids[i:]).decode("utf-8", errors="replace").strip()
            if not tail.strip(CLOSING_QUOTES):
                continue  # whitespace or closing quotes: the mark, if any, comes before them
            core = head.decode("utf-8", errors="replace").strip().rstrip(CLOSING_QUOTES)
            closes = bool(core) and core[-1] in SENTENCE_END and not core.endswith("..")
            return i if closes and not any(c.isalnum() for c in core) else None
        return None
