"""The decoder's start sequence: a prompt's and hotwords' tokens before the task's start tokens.

faster-whisper's layout: <|startofprev|>, the hotwords (comma-separated), the prompt, then the
task's start (<|startoftranscript|> [<|xx|> <|transcribe|>] <|notimestamps|>; the engine picks it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from voxnode.asr.whisper.tokenizer import Tokenizer

# Whisper keeps at most n_text_ctx // 2 - 1 = 223 prompt tokens (the most recent ones).
MAX_PROMPT_TOKENS = 223
MAX_HOTWORD_TOKENS = 111


@dataclass(frozen=True)
class StartSequence:
    # [<|startofprev|>, prompt..., ] <|startoftranscript|>, [<|xx|>, <|transcribe|>,] <|notimestamps|>
    tokens: tuple[int, ...]
    sot_index: int


def prompted_start(
    tokenizer: Tokenizer, sot_prev: int, task: tuple[int, ...], prompt: str, hotwords: Sequence[str]
) -> StartSequence:
    """`task` (from <|startoftranscript|> on) after the hotwords' and the prompt's tokens, if any:
    the hotwords first (at most MAX_HOTWORD_TOKENS), then the prompt's most recent tokens that fit
    in MAX_PROMPT_TOKENS with them."""
    ids: list[int] = []
    words = [w.strip() for w in hotwords if w and w.strip()]
    if words:
        ids += tokenizer.encode(" " + ", ".join(words))[:MAX_HOTWORD_TOKENS]
    if prompt and prompt.strip():
        ids += tokenizer.encode(" " + prompt.strip())[-(MAX_PROMPT_TOKENS - len(ids)) :]
    if not ids:
        return StartSequence(task, 0)
    return StartSequence((sot_prev, *ids, *task), len(ids) + 1)
