"""Sentence-aware endpoints: how long a pause must last depends on what was said before it.

The speculative decode runs as soon as a pause reaches `tail_ms`. Its text says whether the
speaker finished a thought: "Turn on the kitchen lights." ends a sentence, "Ask not," or
"set a timer for" does not. A finished sentence is confirmed after a short hangover, so the final
comes quickly; an unfinished one waits longer, so a speaker who pauses to think mid-sentence gets
one final, not two. Until the decode is back the ordinary hangover applies.

Pure logic on the text: the predicates the pause's rules (stream/end_rules.py) ask.
"""

from __future__ import annotations

import enum

from voxnode import text as script

# Words that (almost) never end an English sentence: articles, conjunctions, clause openers,
# prepositions that need an object, possessives, fillers. Whisper often puts a full stop after them
# anyway when a phrase is cut off ("Set a timer for."), so they override the punctuation. Words that
# do end sentences are left out even if they often open one: auxiliaries ("than he was."), "on"/"off"
# ("turn the lights on."), "that", "not" stays ("he was not" is nearly always cut short).
OPEN_WORDS = frozenset(
    """
a an the and or but nor because although though if unless until while whereas when whenever where
wherever whether than to of at for from with without into onto upon via per between among through
during against towards toward my your our their his its not uh um er erm let's
""".split()
)
# Other languages' (Whisper base): the ideographic full stop and the full-width "?" and "!" of
# Chinese and Japanese, the Arabic question mark, the Devanagari danda (Hindi).
SENTENCE_END = ".?!\u3002\uff1f\uff01\u061f\u0964"
# A closing '.', '?' or '!' counts only when the decoder gave it at least `min_prob`
# (`vad.sentence_end_min_prob`, 0.8). Whisper punctuates fragments too ("Turn on the kitchen." for a
# speaker who paused there), but less surely (measurements in config/vad.py).
# A comma, a dash: more is coming (with the ideographic and full-width commas, the enumeration
# comma "、", and the Arabic comma and semicolon).
OPEN_PUNCTUATION = ",;:-\u2013\u2014\u3001\uff0c\uff1b\uff1a\u060c\u061b"
ELLIPSES = ("...", "\u2026")  # "…", and Chinese "……"
CLOSING_QUOTES = "\"')]\u201d\u2019\u00bb\u300d\u300f\uff09"  # with 」 』 and the full-width ")"
# The same for the languages measured in docs/asr.md ("Other languages"), by Whisper code; words
# that end sentences often enough are left out, as above: French "le"/"la"/"leur" ("Fais-le."),
# Italian "perché" ("Perché?"), German separable particles and pronouns ("Mach das Licht an.",
# "Ich nehme das."), Russian "что" ("Что?").
OPEN_WORDS_BY_LANGUAGE = {
    "en": OPEN_WORDS,
    "fr": frozenset(
        """
un une des du de d' au aux et ou mais car que qu' pour par avec sans dans sur vers chez mon ton son ma ta sa
mes tes ses notre votre nos vos ce cette ces euh
""".split()
    ),
    "es": frozenset(
        """
el los las un una unos unas y e o u pero porque aunque que de del al a en con sin para por hacia desde hasta
mi mis tu tus su sus nuestro nuestra eh
""".split()
    ),
    "it": frozenset(
        """
il lo gli i un uno una e ed o ma se che di del della dei degli delle a al alla da dal dalla in nel nella con
su sul sulla per tra fra mio mia tuo tua suo sua
""".split()
    ),
    "de": frozenset(
        """
den dem des eine einen einem einer und oder aber weil dass wenn ob von für bei zwischen mein meine dein deine
unser unsere äh ähm
""".split()
    ),
    "ru": frozenset(
        """
и или но а чтобы если когда потому в во на с со к ко по о об от до из для без при у мой моя моё мои твой
твоя
""".split()
    ),
}


class Completion(enum.Enum):
    SENTENCE_END = "sentence_end"  # confirm after the short hangover
    OPEN = "open"  # wait the long hangover
    UNKNOWN = "unknown"  # keep the ordinary hangover


def _last_word(text: str) -> str:
    """The last word with a letter in it and no digit, lower case ("for" in "Set a timer for 5.")."""
    for word in reversed(script.words(text)):
        if any(c.isalpha() for c in word) and not any(c.isdigit() for c in word):
            return word
    return ""


def _core(text: str) -> str:
    return text.strip().rstrip(CLOSING_QUOTES)


def ends_open(text: str, language: str = "") -> bool:
    """`text` clearly goes on: it ends on an open word of its language ("and", "for", "the"; `language`
    a Whisper code, "" = English; a language without a list has none), a comma, a dash, an ellipsis."""
    t = _core(text)
    if not t:
        return False
    open_words = OPEN_WORDS_BY_LANGUAGE.get(language or "en", frozenset())
    return _last_word(t) in open_words or t[-1] in OPEN_PUNCTUATION or t.endswith(ELLIPSES)


def ends_sentence(text: str, punctuation_prob: float | None = None, min_prob: float = 0.8) -> bool:
    """`text` ends on a closing mark ('.', '?', '!' and other scripts' own) that the decoder gave at
    least `min_prob` (`punctuation_prob` None: not known, the mark is taken as it is). Open words
    are not looked at: `ends_open` is asked first."""
    t = _core(text)
    return bool(t) and t[-1] in SENTENCE_END and (punctuation_prob is None or punctuation_prob >= min_prob)


def judge(
    text: str,
    ended_cleanly: bool,
    punctuation_prob: float | None = None,
    min_prob: float = 0.8,
    language: str = "",
) -> Completion:
    """Does `text` (the speculative decode of the utterance so far) end a sentence? The text's two
    rules of the pause's chain (stream/end_rules.py: open_ending, then closing_mark) in one call.

    `ended_cleanly`: the decoder stopped on its own end-of-text token (not a token cap, a
    repetition guard or a no-speech verdict); anything else says nothing about the sentence.
    `punctuation_prob`: the decoder's probability of the closing mark it wrote; it must reach `min_prob`.
    `language`: the text's (a Whisper code; "" = English): whose open words apply.
    """
    if not ended_cleanly:
        return Completion.UNKNOWN
    if ends_open(text, language):
        return Completion.OPEN
    if ends_sentence(text, punctuation_prob, min_prob):
        return Completion.SENTENCE_END
    # No closing mark after an ordinary word (often a short command, "turn on the lights", or a
    # fragment), or a hesitant one: the ordinary hangover, not the long one, so the final stays
    # within latency targets.
    return Completion.UNKNOWN
