"""Read a CTranslate2 ``model.bin`` into numpy arrays (build-time helper).

The layout mirrors ``ModelSpec._serialize`` in ctranslate2/specs/model_spec.py:

    u32 binary_version, str spec_name, u32 spec_revision, u32 n_variables,
    n x (str name, u8 rank, u32 dims[rank], u8 dtype_id, u32 n_bytes, bytes),
    u32 n_aliases, n x (str alias, str target)

where ``str`` is a u16 length (including a trailing NUL) followed by the bytes.
Reading it ourselves keeps ctranslate2 out of the conversion path; ctranslate2
is only used to check the converted model.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# Order of include/ctranslate2/types.h DataType; bfloat16 has no numpy dtype
# and Whisper exports never use it, so it is rejected explicitly.
_DTYPES = (np.float32, np.int8, np.int16, np.int32, np.float16, None)
SUPPORTED_BINARY_VERSIONS = (5, 6)


@dataclass(frozen=True)
class Ct2Model:
    spec: str
    revision: int
    binary_version: int
    variables: dict[str, np.ndarray]
    aliases: dict[str, str]

    def get(self, name: str) -> np.ndarray:
        return self.variables[self.aliases.get(name, name)]


class _Cursor:
    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def take(self, fmt: str):
        values = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values if len(values) > 1 else values[0]

    def string(self) -> str:
        length = self.take("H")
        raw = self.data[self.pos : self.pos + length]
        self.pos += length
        return raw.rstrip(b"\0").decode("utf-8")

    def blob(self, n: int) -> bytes:
        raw = self.data[self.pos : self.pos + n]
        if len(raw) != n:
            raise ValueError("model.bin is truncated")
        self.pos += n
        return raw


def read_model(path: Path) -> Ct2Model:
    cur = _Cursor(Path(path).read_bytes())
    version = cur.take("I")
    if version not in SUPPORTED_BINARY_VERSIONS:
        raise ValueError(f"unsupported CTranslate2 binary version {version}")
    spec = cur.string()
    revision = cur.take("I")
    variables: dict[str, np.ndarray] = {}
    for _ in range(cur.take("I")):
        name = cur.string()
        rank = cur.take("B")
        shape = tuple(cur.take("I") for _ in range(rank))
        dtype_id = cur.take("B")
        nbytes = cur.take("I")
        dtype = _DTYPES[dtype_id] if dtype_id < len(_DTYPES) else None
        if dtype is None:
            raise ValueError(f"{name}: unsupported dtype id {dtype_id}")
        variables[name] = np.frombuffer(cur.blob(nbytes), dtype=dtype).reshape(shape)
    aliases = {}
    for _ in range(cur.take("I")):
        alias = cur.string()
        aliases[alias] = cur.string()
    if cur.pos != len(cur.data):  # e.g. split parts joined in the wrong order, or twice
        raise ValueError(f"{path}: {len(cur.data) - cur.pos} bytes after the model's end")
    return Ct2Model(spec, revision, version, variables, aliases)
