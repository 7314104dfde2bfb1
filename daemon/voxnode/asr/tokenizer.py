"""Whisper's byte-level BPE (GPT-2 style): token ids <-> text.

vocabulary.txt holds one token per line (line number = id), written with
GPT-2's byte-to-printable-character map; decoding maps each character back to
its byte and decodes the bytes as UTF-8.

Encoding (for prompts and hotwords only) splits the text with GPT-2's
pre-tokenizer pattern, maps bytes to printable characters and applies the
ranked merges of merges.txt (50000 pairs, from the source model's
tokenizer.json). It runs once per distinct prompt, so it is plain Python and
loads the merges only when first needed.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from voxnode.errors import ModelError


def _printable_to_byte() -> dict[str, int]:
    # GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves,
    # the rest are shifted to code points 256 and up, in byte order.
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) \
        + list(range(ord("®"), ord("ÿ") + 1))
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


class Tokenizer:
    def __init__(self, tokens: list[str], eot: int, merges: Path | None = None) -> None:
        self.tokens = tokens
        self.eot = eot
        self._to_byte = _printable_to_byte()
        self._merges_path = merges
        self._ranks: dict[tuple[str, str], int] | None = None
        self._ids: dict[str, int] | None = None

    @classmethod
    def from_file(cls, path: Path, eot: int, merges: Path | None = None) -> "Tokenizer":
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
            raise ModelError("this model has no merges.txt: prompts and hotwords cannot be encoded")
        ranks = {}
        try:
            lines = Path(self._merges_path).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as e:
            raise ModelError(f"{self._merges_path}: unreadable ({e})") from None
        for line in lines:
            if line.startswith("#version") or not line:
                continue
            a, _, b = line.partition(" ")
            ranks[(a, b)] = len(ranks)
        self._ranks = ranks
        self._ids = {tok: i for i, tok in enumerate(self.tokens[: self.eot])}
        self._to_printable = {b: c for c, b in self._to_byte.items()}

    def _bpe(self, word: str) -> list[str]:
        parts = list(word)
        ranks = self._ranks
        while len(parts) > 1:
            pairs = [(ranks.get((a, b), len(ranks)), i) for i, (a, b) in enumerate(zip(parts, parts[1:]))]
            rank, _ = min(pairs)
            if rank == len(ranks):
                break
            pair = next((parts[i], parts[i + 1]) for r, i in pairs if r == rank)
            merged, i = [], 0
            while i < len(parts):
                if i + 1 < len(parts) and (parts[i], parts[i + 1]) == pair:
                    merged.append(parts[i] + parts[i + 1])
                    i += 2
                else:
                    merged.append(parts[i])
                    i += 1
            parts = merged
        return parts

    def encode(self, text: str) -> list[int]:
        """Text -> token ids (text tokens only: "<|...|>" in the text is spelled out, not special)."""
        return list(self._encode(text))

    @lru_cache(maxsize=64)
    def _encode(self, text: str) -> tuple[int, ...]:
        if self._ranks is None:
            self._load_merges()
        ids = []
        for piece in PRETOKENIZE.findall(text):
            word = "".join(self._to_printable[b] for b in piece.encode("utf-8"))
            ids.extend(self._ids[p] for p in self._bpe(word))
        return tuple(ids)

    def decode_bytes(self, ids: list[int]) -> bytes:
        """Text tokens only: special and timestamp tokens (>= eot) are skipped."""
        chars = "".join(self.tokens[i] for i in ids if 0 <= i < self.eot)
        return bytes(self._to_byte.get(c, ord("?")) for c in chars)

    def decode(self, ids: list[int]) -> str:
        return self.decode_bytes(ids).decode("utf-8", errors="replace").strip()
