"""`voxnode transcribe FILE...`: audio files in, one transcript per file out.

A file that cannot be read costs only its own line (on stderr); the others
are still transcribed and the exit status says whether all succeeded.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TextIO

import numpy as np

from voxnode.asr.recognizer import Recognizer
from voxnode.asr.windows import SAMPLE_RATE, split_at_pauses
from voxnode.errors import AudioFileError


def transcribe_audio(engine: Recognizer, audio: np.ndarray) -> dict:
    """Any length of 16 kHz mono audio -> merged result of its windows."""
    texts, tokens = [], []
    encode_ms = decode_ms = 0.0
    weighted_logprob = 0.0
    weight = 0
    for start, end in split_at_pauses(audio):
        r = engine.transcribe(audio[start:end])
        if r.text:
            texts.append(r.text)
            tokens.extend(r.tokens)
            # Per-window means, weighted by token count (+1 for end-of-text).
            weighted_logprob += r.confidence * (len(r.tokens) + 1)
            weight += len(r.tokens) + 1
        encode_ms += r.encode_ms
        decode_ms += r.decode_ms
    return {
        "text": " ".join(texts),
        "duration_s": round(len(audio) / SAMPLE_RATE, 3),
        "encode_ms": round(encode_ms, 1),
        "decode_ms": round(decode_ms, 1),
        "tokens": tokens,
        "confidence": round(weighted_logprob / weight, 4) if weight else 0.0,
    }


def transcribe_files(
    engine: Recognizer,
    paths: list[str | Path],
    raw: bool = False,
    as_json: bool = False,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
) -> int:
    """Print one line per file (text, or a JSON object); errors go to `err`. Returns the exit status."""
    from voxnode.audio.wavfile import read_audio

    failed = 0
    for path in paths:
        try:
            audio = read_audio(path, raw=raw)
            if len(audio) == 0:
                raise AudioFileError(f"{path}: no audio samples")
        except AudioFileError as e:
            print(f"voxnode: {e}", file=err, flush=True)
            failed += 1
            continue
        except (OSError, ValueError) as e:  # anything the reader did not anticipate still names the file
            print(f"voxnode: {path}: cannot read audio: {e}", file=err, flush=True)
            failed += 1
            continue
        result = transcribe_audio(engine, audio)
        if as_json:
            print(json.dumps({"file": str(path), **result}, ensure_ascii=False), file=out, flush=True)
        else:
            print(result["text"], file=out, flush=True)
    return 1 if failed else 0
