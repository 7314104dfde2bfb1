"""Token ids -> text for Whisper's byte-level BPE (GPT-2 style) vocabulary.

vocabulary.txt holds one token per line (line number = id), written with
GPT-2's byte-to-printable-character map; decoding maps each character back to
its byte and decodes the bytes as UTF-8. Only decoding is needed on device.
"""

from __future__ import annotations

from pathlib import Path

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


class Tokenizer:
    def __init__(self, tokens: list[str], eot: int) -> None:
        self.tokens = tokens
        self.eot = eot
        self._to_byte = _printable_to_byte()

    @classmethod
    def from_file(cls, path: Path, eot: int) -> Tokenizer:
        tokens = Path(path).read_text(encoding="utf-8").split("\n")
        if tokens and tokens[-1] == "":
            tokens.pop()
        if len(tokens) <= eot:
            raise ModelError(f"{path}: {len(tokens)} tokens, expected more than {eot}")
        return cls(tokens, eot)

    def decode_bytes(self, ids: list[int]) -> bytes:
        """Text tokens only: special and timestamp tokens (>= eot) are skipped."""
        chars = "".join(self.tokens[i] for i in ids if 0 <= i < self.eot)
        return bytes(self._to_byte.get(c, ord("?")) for c in chars)

    def decode(self, ids: list[int]) -> str:
        return self.decode_bytes(ids).decode("utf-8", errors="replace").strip()
