"""[asr]: the speech model and how it decodes."""

import re
from collections.abc import Sequence
from dataclasses import dataclass

from voxnode.config.fields import InvalidValue, setting
from voxnode.config.languages import WHISPER_LANGUAGES, code_of_name
from voxnode.config.wording import toml_value
from voxnode.models.find import is_path

# asr.engine -> (module, class) of the `Recognizer` that implements it, imported only when chosen
# (asr/backends.py): the one list of engine names. Adding an engine is its module and a line here.
ENGINES: dict[str, tuple[str, str]] = {
    "whisper-litert": ("voxnode.asr.whisper.engine", "WhisperEngine"),
}
# models/find.py finds `model` in models/whisper-<model>. Measured on the 2-core x86, shared (docs/asr.md,
# "Whisper base and languages"; 5.3 s clip, 1 thread): base vs tiny.en encodes in 71 vs 34 ms, a final
# (beam 3) takes 185 vs 128 ms, `voxnode transcribe` peaks at 178 vs 124 MB RSS, files 76 vs 41 MB.
MODELS = ("tiny.en", "base")
# `voxnode adapt` makes variants of a shipped model, "<model>+<label>" in models/whisper-<model>+<label>
# (docs/adapt.md); scripts/adapt/__main__.py checks its --name against VARIANT_LABEL too.
VARIANT_LABEL = r"[a-z0-9][a-z0-9_-]{0,31}"
_NAMED = re.compile("({})(\\+{})?".format("|".join(map(re.escape, MODELS)), VARIANT_LABEL))

# What a language code looks like; a value of another form is told so ("EN", "English", "en-US").
_CODE_FORM = re.compile(r"[a-z]{2,3}")
# Codes a message lists before "...": Whisper's first tokens are its most-trained languages.
_SHOWN_LANGUAGES = 12


@dataclass(frozen=True)
class AsrConfig:
    engine: str = setting(
        "whisper-litert", "Recognition backend: Whisper on LiteRT with XNNPACK (docs/asr.md).", choices=tuple(ENGINES)
    )
    model: str = setting(
        "tiny.en",
        'Whisper model: "tiny.en" (English only) or "base" (multilingual, more accurate; ~1.5x the time '
        "per final, +55 MB RSS), found in models/whisper-<model>; a variant made by `voxnode adapt`, e.g. "
        '"tiny.en+kitchen" (models/whisper-tiny.en+kitchen); or the path of a model folder.',
    )
    model_dir: str = setting("", 'Folder of the converted model; "" = the bundled models/whisper-<model>.')
    # "en" by default, not "auto": a node hears one household's language, and detection on a 1-2 s
    # command is the least reliable part of multilingual Whisper; it also costs a decoder call.
    language: str = setting(
        "en",
        'Spoken language, a Whisper code ("en", "de", "fr", ...); "auto" = detected per utterance. Other '
        'than "en" needs a multilingual model (model = "base").',
    )
    num_threads: int = setting(
        0,
        "Inference threads per engine; 0 = the physical cores (one left free below 4 cores) shared by the decode "
        "workers, 1 to 4.",
        min=0,
        max=64,
    )
    # Finals' defaults, chosen for live latency (end of speech -> final p95 <= 800 ms with the hangover,
    # so a final of an utterance < 8 s should decode in a median ~150-200 ms on a 2-core x86) and for WER
    # (docs/benchmarks.md, "ASR beam size" and "ASR decode time per final"; 50 real utterances, clean /
    # babble 10 dB; final wall ms median with 2 threads, machine shared, load ~4-5):
    #   greedy, 6 s: 7.3 / 27.8 %, 208 ms     beam 3, 6 s: 4.4 / 22.0 %, 225 ms
    #   beam 2, 6 s: 5.6 / 22.0 %, 212 ms     beam 5, 6 s: 4.1 / 22.0 %, 244 ms
    #   beam 5, 10 s (the earlier default): 3.4 / 22.0 %, 291 ms (the 10 s window doubles the encode)
    # Beam 3 in 6 s keeps most of beam 5's gain over greedy at +8 % time instead of +40 %.
    beam_size: int = setting(3, "Beam width for finals (1 = greedy); partials are always greedy.", min=1, max=8)
    # Drafts (asr/search.verified_draft): the live pipeline hands each decode the tokens of the
    # utterance's previous hypothesis (the last partial); the decoder checks them all in its one
    # prefill call, takes the head greedy decoding agrees with, and decodes only the rest (finals:
    # the beam searches the tail after that head). Measured (scripts/bench/final_latency.py
    # --drafts; 1 thread, 90 real utterances, the draft = a partial of all but the last 0.5 s,
    # each final right after a partial): greedy text identical with and without a draft (0 of
    # 98 differ); finals clean 4.36 -> 4.60 % WER, babble 10 dB 23.0 -> 23.0 %; median final
    # 41.7 -> 31.9 ms, p95 166 -> 121 ms; 80 % of draft tokens accepted clean, 57 % in babble.
    draft: bool = setting(
        True,
        "Decode from the previous partial's tokens: verified in one decoder call, only the rest is decoded "
        "(finals: the beam covers the tail). false = every decode from scratch.",
    )
    # Since stop 45 a final's beam takes a draft token only while greedy's choice leads the runner-up by
    # draft_margin nats (hotword bonus included): where greedy is unsure the beam may choose otherwise,
    # and taking the token tied the final to whichever partial came back last. Partials take every
    # agreeing token (same text either way). scripts/bench/drafts.py, 50 utterances, margin 0 / 1: finals
    # unlike the no-draft beam's clean 8 / 4, babble 10 dB 14 / 5; WER babble 23.24 / 22.28 % (no draft
    # 21.79), pink 5 dB 11.62 / 12.11; tokens taken clean 75 / 51 %, babble 59 / 18 %. Live (3 rounds side
    # by side, x86): babble WER 24.0 -> 17.8 %, clean latency the same, babble p50 305 -> 344 ms; emulated
    # Pi 4 (stop 46, 4 pairs clean + pink 10 dB, 2 babble 10 dB): finals ~60 ms later at p50 with the same
    # words, babble one word better (paced partials are fewer): README tells a Pi 4 to set 0 (docs/benchmarks.md
    # "`asr.draft_margin` on the emulated Pi 4").
    draft_margin: float = setting(
        1.0,
        "A final takes a draft token only while greedy decoding prefers it by this many nats over the next "
        "choice; 0 = every token greedy agrees with (a Pi 4's finals ~60 ms sooner; on x86 more finals decided by "
        "the last partial: babble WER up ~6 points).",
        min=0.0,
        max=20.0,
    )
    min_window_s: float = setting(
        6.0,
        "Shortest encoder window for finals, seconds (audio is zero-padded up to it); partials use 6.",
        min=6.0,
        max=30.0,
    )
    fallback_temperatures: tuple[float, ...] = setting(
        (0.2, 0.4, 0.6, 0.8, 1.0),
        "Finals that loop or are unsure are decoded again by sampling at these temperatures; [] = never.",
        min=0.01,
        max=2.0,
    )
    prompt: str = setting(
        "",
        "Text the model reads as if said just before each utterance: names, spelling, style. Per stream: "
        "[[streams]] prompt.",
    )
    hotwords: tuple[str, ...] = setting(
        (), 'Words or phrases made more likely, e.g. ["Kitchen", "Living room"]. Per stream: [[streams]] hotwords.'
    )

    hotword_boost: float = setting(
        2.0,
        "Bonus per hotword token when ranking hypotheses, in nats (log-probability); 0 = hotwords only "
        "go into the prompt.",
        min=0.0,
        max=10.0,
    )

    def check(self) -> None:
        if list(self.fallback_temperatures) != sorted(self.fallback_temperatures):
            raise InvalidValue("fallback_temperatures", "must be in increasing order")
        if not (is_path(self.model) or _NAMED.fullmatch(self.model)):
            raise InvalidValue(
                "model",
                'use "tiny.en", "base", a `voxnode adapt` variant such as "tiny.en+kitchen" '
                "(lower-case letters, digits, - and _ after the +) or the path of a model folder",
            )
        # With model_dir set (or a path) the model is whichever is there: the engine checks the language at load.
        problem = language_problem(self.language, shipped_model(self.model) == "tiny.en" and not self.model_dir)
        if problem:
            raise InvalidValue("language", problem)


def language_problem(language: str, english_only: bool = False) -> str | None:
    """Why `language` cannot be decoded: not "auto" nor a Whisper language code, or not "en" for an
    English-only model (`english_only`: the shipped tiny.en); None if it can. Before, "EN" and "English"
    were told `must match auto|[a-z]{2,3}`: the pattern, not the cause; before stop 47 "English" was
    told no more than that (now: did you mean "en"?)."""
    named = code_of_name(language)  # "English", "german": a language's name (never a code: "lao" is "lo")
    if named is not None:
        if english_only and named != "en":
            return 'tiny.en is English-only: use "en", or model = "base" for other languages'
        return f"a Whisper language code, not a language's name (did you mean {toml_value(named)}?)"
    if not (language == "auto" or _CODE_FORM.fullmatch(language)):
        # "EN", "en-US", "en_GB": a code spelled another way
        guess = re.split(r"[-_ ]", language.lower(), maxsplit=1)[0]
        hint = f" (did you mean {toml_value(guess)}?)" if guess in WHISPER_LANGUAGES else ""
        return f'a lower-case Whisper language code such as "en", "de", or "auto"{hint}'
    if english_only and language != "en":
        return 'tiny.en is English-only: use "en", or model = "base" for other languages'
    if language == "auto" or language in WHISPER_LANGUAGES:
        return None
    # "eng", "deu", "fra": ISO 639-2 codes, whose first two letters are often Whisper's (not "spa": "es")
    hint = f" (did you mean {toml_value(language[:2])}?)" if language[:2] in WHISPER_LANGUAGES else ""
    return f"not a Whisper language code{hint}; Whisper knows {known_languages(WHISPER_LANGUAGES)}"


def known_languages(codes: Sequence[str]) -> str:
    """A model's language codes, for a message: all of a few, the first (most trained) of many."""
    shown = ", ".join(map(toml_value, codes[:_SHOWN_LANGUAGES]))
    if len(codes) <= _SHOWN_LANGUAGES:
        return shown
    return f'{shown} and {len(codes) - _SHOWN_LANGUAGES} more (docs/asr.md, "Whisper base and languages")'


def shipped_model(model: str) -> str | None:
    """The shipped model `model` is or derives from ("tiny.en+kitchen" -> "tiny.en"); None for a path."""
    return None if is_path(model) else model.split("+", 1)[0]
