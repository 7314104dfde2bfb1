"""Sentence-aware endpoints: how long a pause must last depends on what was said before it.

The speculative decode runs as soon as a pause reaches `tail_ms`. Its text says whether the
speaker finished a thought: "Turn on the kitchen lights." ends a sentence, "Ask not," or
"set a timer for" does not. A finished sentence is confirmed after a short hangover, so the final
comes quickly; an unfinished one waits longer, so a speaker who pauses to think mid-sentence gets
one final, not two. Until the decode is back the ordinary hangover applies.

Pure logic on the text; the pipeline applies the verdict to the open pause.
"""

from __future__ import annotations

import enum
import re

# Words that cannot end an English sentence: articles, conjunctions, prepositions, possessives,
# auxiliaries, fillers. Whisper often puts a full stop after them anyway when a phrase is cut off
# ("Set a timer for."), so they override the punctuation.
OPEN_WORDS = frozenset(
    """
a an the and or but nor so yet because although though if unless until while whereas when whenever where
wherever whether that which who whom whose what than then to of in on at by for from with without into onto
upon about above below under over between among through during before after against towards toward via per
my your our their his her its this these those some any every each no not is are was were be been being am
do does did have has had will would shall should can could may might must let's uh um er erm like
""".split()
)
SENTENCE_END = ".?!"
OPEN_PUNCTUATION = ",;:-\u2013\u2014"  # a comma, a dash: more is coming
_WORD = re.compile(r"[A-Za-z']+")


class Completion(enum.Enum):
    SENTENCE_END = "sentence_end"  # confirm after the short hangover
    OPEN = "open"  # wait the long hangover
    UNKNOWN = "unknown"  # keep the ordinary hangover


def judge(text: str, ended_cleanly: bool) -> Completion:
    """Does `text` (the speculative decode of the utterance so far) end a sentence?

    `ended_cleanly`: the decoder stopped on its own end-of-text token (not a token cap, a
    repetition guard or a no-speech verdict); anything else says nothing about the sentence.
    """
    t = text.strip().rstrip("\"')]")
    if not t or not ended_cleanly:
        return Completion.UNKNOWN
    words = _WORD.findall(t)
    last = words[-1].lower() if words else ""
    if last in OPEN_WORDS or t[-1] in OPEN_PUNCTUATION or t.endswith("..."):
        return Completion.OPEN
    if t[-1] in SENTENCE_END:
        return Completion.SENTENCE_END
    return Completion.OPEN  # no closing punctuation: Whisper writes one when it hears a sentence end
