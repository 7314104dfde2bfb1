"""`voxnode transcribe FILE...`: audio files in, one transcript per file out.

A file that cannot be read costs only its own line (on stderr); the others
are still transcribed and the exit status says whether all succeeded. Files are
streamed (voxnode.audio.audio_stream): at most one window plus one read block
of audio is in memory, however long the file.

Every file goes through the same front-end as a live stream's audio before the engine hears it
(high-pass, and the denoiser where `frontend.denoise` gives recognition denoised audio;
frontend/recognition.py), so the offline figures measure what the daemon does.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TextIO

import numpy as np

from voxnode.asr.recognizer import Recognizer
from voxnode.asr.windows import FRAME, MAX_WINDOW_S, SAMPLE_RATE, SMOOTH_FRAMES, split_at_pauses
from voxnode.audio.audio_stream import MAX_SECONDS, AudioStream
from voxnode.errors import AudioFileError
from voxnode.frontend.chain import FrontEndParams
from voxnode.frontend.recognition import recognition_blocks

# The cut search looks at smoothed energy up to the window limit; this much audio beyond it keeps the
# smoothing at the limit the same as over the whole file.
_LOOKAHEAD = SMOOTH_FRAMES * FRAME
# What a file that is not a WAV may be instead, in `voxnode transcribe`'s words (run --file has its own).
RAW_HINT = "use --raw for headerless S16_LE 16 kHz audio"


def windows(blocks: Iterable[np.ndarray], max_s: float = MAX_WINDOW_S) -> Iterator[np.ndarray]:
    """Blocks of 16 kHz audio -> windows of at most `max_s`, each cut as split_at_pauses cuts (at the
    quietest moment before the limit), holding at most one window plus one block."""
    max_len = int(max_s * SAMPLE_RATE)
    buf = np.zeros(0, dtype=np.float32)
    for block in blocks:
        buf = np.concatenate((buf, block)) if buf.size else block
        while buf.size > max_len + _LOOKAHEAD:
            (_, cut), *_ = split_at_pauses(buf[: max_len + _LOOKAHEAD], max_s)
            yield buf[:cut]
            buf = buf[cut:]
    for start, end in split_at_pauses(buf, max_s) if buf.size else ():
        yield buf[start:end]


def transcribe_audio(
    engine: Recognizer, audio: np.ndarray | Iterable[np.ndarray], frontend: FrontEndParams | None = None
) -> dict:
    """Any length of 16 kHz mono audio (an array, or blocks of one) -> merged result of its windows.

    `frontend`: run the audio through a fresh front-end with these parameters first (None: as it is)."""
    blocks: Iterable[np.ndarray] = [audio] if isinstance(audio, np.ndarray) else audio
    if frontend is not None:
        blocks = recognition_blocks(frontend, blocks)
    texts: list[str] = []
    tokens: list[int] = []
    encode_ms = decode_ms = 0.0
    weighted_logprob = 0.0
    weight = 0
    samples = 0
    language, language_prob = "", None  # the first window with text decides (each window is detected alone)
    for window in windows(blocks):
        samples += window.size
        r = engine.transcribe(window)
        if r.text:
            if not texts:
                language, language_prob = r.language, r.language_prob
            texts.append(r.text)
            tokens.extend(r.tokens)
            # Per-window means, weighted by token count (+1 for end-of-text).
            weighted_logprob += r.confidence * (len(r.tokens) + 1)
            weight += len(r.tokens) + 1
        encode_ms += r.encode_ms
        decode_ms += r.decode_ms
    return {
        "text": " ".join(texts),
        "duration_s": round(samples / SAMPLE_RATE, 3),
        "encode_ms": round(encode_ms, 1),
        "decode_ms": round(decode_ms, 1),
        "tokens": tokens,
        "confidence": round(weighted_logprob / weight, 4) if weight else 0.0,
        "language": language,
        "language_prob": language_prob,
    }


def readable_files(
    paths: list[str], raw: bool = False, max_seconds: float = MAX_SECONDS, err: TextIO = sys.stderr
) -> list[str]:
    """The files whose header reads (exists, a WAV or --raw, not too long), checked before the model loads
    (seconds on a Pi), so a typo's line comes at once; each other one's line is printed on `err` now. Only
    the header is read: the audio is streamed later. A FIFO is left to transcribe_files: it
    can be read once, or is refused there."""
    readable = []
    for path in paths:
        if Path(path).is_fifo():  # read once, by transcribe_files; a device is refused here
            readable.append(path)
            continue
        try:
            AudioStream(path, raw=raw, max_seconds=max_seconds, raw_hint=RAW_HINT).close()
        except AudioFileError as e:
            print(f"voxnode: error: {e}", file=err, flush=True)
            continue
        except (OSError, ValueError) as e:
            print(f"voxnode: error: {path}: cannot read audio: {e}", file=err, flush=True)
            continue
        readable.append(path)
    return readable


def transcribe_files(
    engine: Recognizer,
    paths: Sequence[str | Path],
    raw: bool = False,
    as_json: bool = False,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
    max_seconds: float = MAX_SECONDS,
    frontend: FrontEndParams | None = None,
) -> int:
    """Print one line per file (text, or a JSON object); errors go to `err`. Returns the exit status.
    `frontend`: the front-end each file goes through (`voxnode transcribe`: the config's)."""
    failed = 0
    for path in paths:
        try:
            # The header and the known length are checked here, the rest while the windows are transcribed;
            # a file that turns out bad midway (a pipe that stops, past the limit) prints only its error.
            with AudioStream(path, raw=raw, max_seconds=max_seconds, raw_hint=RAW_HINT) as stream:
                result = transcribe_audio(engine, stream.blocks(), frontend)
        except AudioFileError as e:
            print(f"voxnode: error: {e}", file=err, flush=True)  # the CLI's words for an error
            failed += 1
            continue
        except (OSError, ValueError) as e:  # anything the reader did not anticipate still names the file
            print(f"voxnode: error: {path}: cannot read audio: {e}", file=err, flush=True)
            failed += 1
            continue
        if as_json:
            print(json.dumps({"file": str(path), **result}, ensure_ascii=False), file=out, flush=True)
        else:
            print(result["text"], file=out, flush=True)
    return 1 if failed else 0
