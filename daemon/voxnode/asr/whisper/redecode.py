"""A final's second looks: when the engine decodes again, and what it keeps.

While decoding (partials and finals): a hypothesis that says a phrase of two or more words again,
its copies holding more letters than the speech could, is marked; at the token cap, or once every live
hypothesis is so marked and none has ended, they end at their first copies (`repeat_cut`,
search.beam_search; stop 53: two of three token-cap loops of 150 finals no longer retried, a
final's CPU -12 % on the mean in clean and pink 10 dB).

After the first decode of a final (engine.WhisperEngine.transcribe):

1. a loop (no end-of-text, a phrase said again and again, the whole utterance twice) is decoded
   again in a longer window, without the draft (`looped`; asr/whisper/window.py), unless the
   decoder ended after saying the whole utterance again faster than speech could: that is cut to
   its first copy from the same window (`collapse`; measured in stop 48: the same words in 5 of 6
   such finals, the sixth better, at half their CPU);
2. text that is unsure or too repetitive is sampled at rising temperatures (`needs_fallback`,
   `fallback`: Whisper's temperature fallback);
3. a whole-utterance repeat longer than its speech could hold is cut to one copy (`collapse`;
   partials too: it costs no decode).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable

import numpy as np

from voxnode.asr import noise
from voxnode.asr.whisper import guards, search
from voxnode.asr.whisper.decoder import DecoderRunner, Prefix
from voxnode.asr.whisper.hypothesis import Decoded, RepeatCut
from voxnode.asr.whisper.token_rules import TokenRules

log = logging.getLogger(__name__)

TextOf = Callable[[list[int]], str]  # tokens -> text (Tokenizer.decode)

# Sampling is seeded per call: the same audio gives the same transcript.
SAMPLING_SEED = 0


def looped(out: Decoded, text_of: TextOf) -> bool:
    """No end-of-text, a phrase said again and again, or the whole utterance said 2+ times.

    After a short command in a mostly empty window tiny.en may say it again before it ends, and a
    draft (the partial's greedy text) makes that likelier: it holds the final's beam to greedy
    decoding's head, which repeats where the beam alone ends after one copy. Live
    (scripts/bench/probe_repeats.py, clean, 2 x 65 short commands, no prompt or one of 2) 12 finals of
    392 were a command twice or three times, 5 with `[asr] draft = false`; the phrases were 1-2
    words, which repeated_phrase (3+ words twice, a word 4+ times) let through. Offline, the same
    audio with the partial's tokens as the draft gave "Message deleted. Message deleted.", the
    beam without a draft one copy. The retry decodes without the draft: 0 of 392 repeat.
    """
    if out.stop_reason != "eot":
        return True
    text = text_of(out.tokens)
    return guards.repeated_phrase(text) or guards.is_repeated_utterance(text)


def needs_fallback(out: Decoded, text_of: TextOf) -> bool:
    """Whisper's rule: a loop, or text too repetitive, or the model unsure, unless it is silence."""
    if out.no_speech_prob > noise.NO_SPEECH_THRESHOLD:
        return False
    return (
        out.stop_reason != "eot"
        or out.avg_logprob < noise.LOGPROB_THRESHOLD
        or guards.is_too_repetitive(text_of(out.tokens))
    )


def fallback(
    decoder: DecoderRunner,
    rules: TokenRules,
    text_of: TextOf,
    first: Decoded,
    prefix: Prefix,
    max_new: int,
    best_of: int,
    temperatures: tuple[float, ...],
    abandon: threading.Event | None = None,
) -> Decoded:
    """Sample at rising temperatures until a result passes; else the best of all tries
    (faster-whisper's choice: highest mean log-probability among those not too repetitive)."""
    rng = np.random.default_rng(SAMPLING_SEED)
    tries = [first]
    for t in temperatures:
        out = search.sample(decoder, rules, prefix, max_new, best_of, t, rng, abandon)
        if not needs_fallback(out, text_of):
            return out
        tries.append(out)
    plain = [r for r in tries if not guards.is_too_repetitive(text_of(r.tokens))]
    return max(plain or tries, key=lambda r: r.avg_logprob)


def first_copy_cut(tokens: list[int], text_of: TextOf, span_s: Callable[[], float], min_words: int = 1) -> int | None:
    """How many of `tokens` make the first copy when their text is a whole-utterance repeat
    (of a phrase of at least `min_words` words) with more letters than speech of `span_s()` seconds
    could hold (guards.too_fast); else None. The span is measured only for a text that repeats."""
    text = text_of(tokens)
    if not guards.is_repeated_utterance(text) or not guards.too_fast(text, span_s()):
        return None
    if guards.repeat_unit(text)[0] < min_words:
        return None
    m = guards.first_copy(tokens, text_of)
    return m if m < len(tokens) else None


def repeat_cut(text_of: TextOf, audio: np.ndarray) -> RepeatCut:
    """The rule of `collapse` for the search to apply while it decodes (search.beam_search's
    `repeat_cut`): a hypothesis that says a phrase of two or more words again, its copies holding
    more than the speech could, ends after its first copy instead of looping on to the end-of-text
    or the token cap and, for a final, being decoded again in a longer window. A word said again
    and again ("5 5 5 5") is left to the search's own loop cut (guards.repeated_tail) and the
    retry: "five five" is said so, and its first copy would be a word short."""

    span_s = functools.cache(functools.partial(guards.speech_span_s, audio))  # once, if a text repeats

    def cut(tokens: list[int]) -> int | None:
        m = first_copy_cut(tokens, text_of, span_s, min_words=2)
        if m is not None:
            log.debug("decoding cut at the first copy, said again faster than speech: %r", text_of(tokens))
        return m

    return cut


def collapse(out: Decoded, text_of: TextOf, audio: np.ndarray) -> Decoded:
    """`out` cut to the first copy when its text is a whole-utterance repeat with more letters
    than `audio`'s speech could hold (guards.too_fast); else `out` itself. The stop reason stays:
    decoding did end there."""
    m = first_copy_cut(out.tokens, text_of, functools.partial(guards.speech_span_s, audio))
    if m is None:
        return out
    log.debug("whole-utterance repeat cut to one copy: %r", text_of(out.tokens))
    ended = out.logprobs[len(out.tokens) :]  # the end-of-text token's, if reached
    return Decoded(
        out.tokens[:m], out.logprobs[:m] + ended, out.no_speech_prob, out.stop_reason, out.temperature, out.bonus
    )
