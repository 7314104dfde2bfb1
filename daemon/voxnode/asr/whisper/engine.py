"""The `whisper-litert` backend: Whisper (tiny.en or base) converted to TFLite, run by LiteRT with XNNPACK.

WhisperEngine is one loaded Whisper model, shared by every audio stream of the process.

Languages: an English-only model (tiny.en) starts every decode with <|startoftranscript|>
<|notimestamps|>; a multilingual one (base) with <|startoftranscript|> <|xx|> <|transcribe|>
<|notimestamps|>, where xx is `[asr] language`, or, for "auto", the language token the decoder
rates highest right after <|startoftranscript|> (Whisper's detect_language: one extra decoder
call on the utterance's own encoder pass). The result says which language it used.

Concurrency: `transcribe()` may be called from any thread. The interpreters
are not re-entrant, so calls are serialised by a FIFO ticket lock: concurrent
callers wait and are served one at a time in the order they arrived; each
holds the engine for one encoder pass plus its decoding (tens to hundreds of
milliseconds per utterance). Model loading is the only slow step and happens
once, in `load()`.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from voxnode.asr import noise
from voxnode.asr.fifo_lock import FifoLock
from voxnode.asr.mel import SAMPLE_RATE, LogMel
from voxnode.asr.recognizer import Capabilities, DecodeAbandoned, Recognizer, TranscriptResult
from voxnode.asr.whisper import guards, redecode, search
from voxnode.asr.whisper.decoder import DecoderRunner, Prefix
from voxnode.asr.whisper.encoder import EncoderRunner
from voxnode.asr.whisper.files import ModelFiles, checked_model_dir, default_model_dir, model_setting, open_model_dir
from voxnode.asr.whisper.hotwords import HotwordBias
from voxnode.asr.whisper.hypothesis import Decoded, RepeatCut
from voxnode.asr.whisper.load import LiteRtEngineInfo, is_own_model, load_parts
from voxnode.asr.whisper.options import ROLES, DecodeOptions
from voxnode.asr.whisper.prompt import StartSequence, prompted_start
from voxnode.asr.whisper.token_rules import TokenRules
from voxnode.asr.whisper.tokenizer import Tokenizer
from voxnode.asr.whisper.window import MAX_SECONDS, first_window, retry_window
from voxnode.config.asr import known_languages
from voxnode.config.wording import key_value, naming, toml_value
from voxnode.errors import ModelError
from voxnode.models.files import MANIFEST

if TYPE_CHECKING:
    from collections.abc import Sequence

    from voxnode.config.asr import AsrConfig

log = logging.getLogger(__name__)


class WhisperEngine(Recognizer):
    def __init__(
        self,
        files: ModelFiles,
        encoder: EncoderRunner,
        decoder: DecoderRunner,
        tokenizer: Tokenizer,
        info: LiteRtEngineInfo,
        options: DecodeOptions | None = None,
    ) -> None:
        self.files = files
        self._encoder = encoder
        self._decoder = decoder
        self._tokenizer = tokenizer
        self._rules = TokenRules(files.config)
        self._mel = LogMel(int(files.config["n_mels"]))
        self._lock = FifoLock()
        self._closed = False  # close() closed the decoder's model file: no decode after it
        self.info = info
        self.options = options or default_options()
        tok = files.config["tokens"]
        self._sot, self._no_timestamps = int(tok["sot"]), int(tok["no_timestamps"])
        self._sot_prev = tokenizer.special("<|startofprev|>")
        self._biases: dict[tuple[str, ...], HotwordBias | None] = {}
        self.draft_stats = search.DraftStats()
        self.multilingual = bool(files.config.get("multilingual", False))
        # code -> token id; an English-only model has no language tokens
        self.languages: dict[str, int] = {str(k): int(v) for k, v in files.config.get("languages", {}).items()}
        if self.multilingual and not self.languages:
            raise ModelError(f"{files.root / 'model_config.json'}: multilingual but lists no languages")
        self._transcribe = int(files.config["transcribe"]) if self.multilingual else -1
        self._language_ids = np.asarray(list(self.languages.values()), dtype=np.int64)
        self._language_codes = list(self.languages)
        self.check_language(self.options.language)
        self.capabilities = Capabilities(
            languages=tuple(self.languages) if self.multilingual else ("en",),
            language_detection=self.multilingual,
            prompt=True,
            hotwords=True,
            drafts=True,
            no_speech=True,
            punctuation_prob=True,
        )

    def check_language(self, language: str) -> None:
        """Raises ModelError (naming asr.language) unless this model can decode `language`."""
        if self.multilingual:
            if language != "auto" and language not in self.languages:
                known = f"{self.files.name}, which knows {known_languages(self._language_codes)}"
                raise ModelError(f"asr.language = {toml_value(language)}: not a language of {known}")
        elif language != "en":
            raise ModelError(
                f"asr.language = {toml_value(language)}: {self.files.name} is English-only "
                '(use "en", or asr.model = "base" for other languages)'
            )

    @classmethod
    def from_config(cls, config: AsrConfig) -> WhisperEngine:
        setting = model_setting(config)
        with naming(*setting):
            return cls.load(
                checked_model_dir(config.model_dir, config.model),
                config.num_threads or None,
                options=DecodeOptions.from_config(config),
                owner=key_value(*setting),  # it said "asr.model:" for asr.model_dir too, and no value
                own=is_own_model(config),
            )

    @classmethod
    def check_model(cls, config: AsrConfig) -> None:
        # The files and their checksums, as load() checks them (0.1 s for tiny.en); errors name the key.
        with naming(*model_setting(config)):
            open_model_dir(checked_model_dir(config.model_dir, config.model))

    @classmethod
    def model_id_file(cls, config: AsrConfig) -> Path | None:
        return default_model_dir(config.model_dir, config.model) / MANIFEST  # it lists every file's sha256

    @classmethod
    def load(
        cls,
        model_dir: Path,
        num_threads: int | None = None,
        variant: str | None = None,
        options: DecodeOptions | None = None,
        owner: str = "asr.model",
        own: bool = False,
    ) -> WhisperEngine:
        """Check and load the model; raises ModelError saying what is wrong (a graph's messages open
        with `owner`; `own`: a folder of the user's, load_parts)."""
        p = load_parts(Path(model_dir), num_threads, variant, owner, own)
        return cls(p.files, p.encoder, p.decoder, p.tokenizer, p.info, options)

    def close(self) -> bool:
        # Never waits: a worker still decoding after the scheduler's stop deadline keeps the file.
        if not self._lock.acquire_if_free():
            log.info("%s: a decode is still running; its model file closes when the process exits", self.files.name)
            return False
        try:
            self._decoder.close()
            self._closed = True
        finally:
            self._lock.release()
        return True

    def start_sequence(
        self, prompt: str = "", hotwords: tuple[str, ...] | list[str] = (), language: str | None = None
    ) -> StartSequence:
        """The decoder's start tokens for a prompt and hotwords (prompt.prompted_start). `language`:
        a code of a multilingual model (None: the configured one, English where that is "auto"); an
        English-only model ignores it."""
        if self.multilingual:
            code = language or self.options.language
            code = "en" if code == "auto" else code
            self.check_language(code)
            task: tuple[int, ...] = (self._sot, self.languages[code], self._transcribe, self._no_timestamps)
        else:
            task = (self._sot, self._no_timestamps)
        return prompted_start(self._tokenizer, self._sot_prev, task, prompt, hotwords)

    def detect_language(self) -> tuple[str, float]:
        """The language of the audio encoded last, with its probability: the language token the
        decoder rates highest after <|startoftranscript|> alone (openai-whisper's detect_language;
        faster-whisper does the same on the first 30 s window)."""
        logits = self._decoder.prefill([self._sot], 0).first_logits[self._language_ids].astype(np.float64)
        probs = np.exp(logits - logits.max())
        probs /= probs.sum()
        best = int(np.argmax(probs))
        return self._language_codes[best], float(probs[best])

    def transcribe(
        self,
        audio: np.ndarray,
        *,
        role: str = "final",
        prompt: str | None = None,
        hotwords: tuple[str, ...] | list[str] | None = None,
        beam_size: int | None = None,
        abandon: threading.Event | None = None,
        language: str | None = None,
        draft: Sequence[int] = (),
    ) -> TranscriptResult:
        """float32 mono 16 kHz audio in [-1, 1], at most 30 s -> text and timings.

        role "final" decodes with the beam search, the finals' window and the
        temperature fallback of `options`; "partial" greedily in the shortest
        window (a partial is replaced a moment later). prompt/hotwords/beam_size
        override the options for this call (prompt "" or hotwords () = none), and so does
        `language` (a code or "auto"; ModelError where the model lacks it). Once `abandon`
        is set the call raises DecodeAbandoned before its next model call (the encoder pass, or
        one decoder step: ~10 ms here, not the whole decode).

        `draft`: tokens expected to begin the text (a partial's of the same utterance a moment
        ago), verified in the decoder's prefill call (search.verified_draft); decoding goes on
        from the first token the decoder disagrees with. See `_decode` for what it changes.
        """
        if role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}, not {role!r}")
        lang = self.options.language if language is None else language
        if language is not None:
            self.check_language(lang)
        forced = "en" if not self.multilingual else None if lang == "auto" else lang
        audio = np.asarray(audio, dtype=np.float32).reshape(-1)
        duration = len(audio) / SAMPLE_RATE
        if duration > MAX_SECONDS + 1e-6:
            raise ValueError(f"audio is {duration:.1f} s; the engine takes at most {MAX_SECONDS:.0f} s per call")
        if not np.all(np.isfinite(audio)):
            raise ValueError("audio contains NaN or infinite samples")
        if len(audio) == 0 or float(np.max(np.abs(audio))) < guards.SILENCE_PEAK:
            return TranscriptResult("", [], 0.0, 1.0, 0.0, 0.0, duration, "silence", language=forced or "")
        opts = self.options
        final = role == "final"
        beam = max(1, int(beam_size or opts.beam_size)) if final else 1
        words = tuple(opts.hotwords if hotwords is None else hotwords)
        text_prompt = opts.prompt if prompt is None else prompt
        bias = self._bias(words)
        min_window = opts.min_window_s if final else opts.partial_window_s
        window = first_window(duration, min_window)
        max_new = guards.max_new_tokens(duration)
        with self._lock:
            if self._closed:  # checked under the lock close() takes: else a ValueError deep in the decoder
                raise RuntimeError(f"{self.files.name}: engine closed (close() was called); load it again")
            t0 = time.perf_counter()
            self._encode(audio, window)
            t1 = time.perf_counter()
            if abandon is not None and abandon.is_set():
                raise DecodeAbandoned
            # The language is decided once per call, in the first window (a retry keeps it);
            # detecting it counts as decoding time.
            language_prob = None
            code = forced
            if code is None:
                code, language_prob = self.detect_language()
            start = self.start_sequence(text_prompt, words, code)
            text_of = self._tokenizer.decode
            repeats = redecode.repeat_cut(text_of, audio)
            prefix, out, (drafted, accepted) = self._decode(start, max_new, beam, bias, abandon, draft, repeats)
            t2 = time.perf_counter()
            encode_ms, decode_ms = (t1 - t0) * 1000, (t2 - t1) * 1000
            text_window = window
            looped = final and redecode.looped(out, text_of)
            if looped and out.stop_reason == "eot":
                # The decoder ended, after saying the whole utterance again: where the copies hold more
                # than the speech could, the first copy is the utterance, with no second encode
                # (redecode.collapse; a real repetition fits its speech and goes to the retry).
                cut = redecode.collapse(out, text_of, audio)
                looped, out = cut is out, cut
            if looped and window < MAX_SECONDS:
                # No end-of-text, a phrase said again and again, or the whole utterance twice: the
                # short window made decoding loop, or a draft held the beam to greedy decoding's
                # loop (redecode.looped). A longer window (closer to Whisper's 30 s training
                # windows), decoded without the draft, nearly always ends, and says the phrase once
                # unless it was said twice.
                # Not for partials: a preview replaced a moment later is not worth a second,
                # longer encode (live, 12 of 19 window retries were partials', 130-300 ms each,
                # and a final waiting behind one waits for the whole encode).
                longer = retry_window(window)
                log.debug(
                    "final looped in %g s (%s): %r; again in %g s", window, out.stop_reason, text_of(out.tokens), longer
                )
                window = longer
                t0 = time.perf_counter()
                self._encode(audio, window)
                t1 = time.perf_counter()
                prefix = self._decoder.prefill(list(start.tokens), start.sot_index)
                retry = search.beam_search(
                    self._decoder, self._rules, prefix, max_new, beam, bias, abandon, repeat_cut=repeats
                )
                t2 = time.perf_counter()
                encode_ms, decode_ms = encode_ms + (t1 - t0) * 1000, decode_ms + (t2 - t1) * 1000
                if retry.stop_reason == "eot" or out.stop_reason != "eot":
                    out, text_window = retry, window
            if final and opts.temperatures and redecode.needs_fallback(out, text_of):
                # Sampled in the window the decoder holds (the longer one after a retry).
                t0 = time.perf_counter()
                out = redecode.fallback(
                    self._decoder, self._rules, text_of, out, prefix, max_new, beam, opts.temperatures, abandon
                )
                decode_ms += (time.perf_counter() - t0) * 1000
                if out.temperature:
                    text_window = window
        out = redecode.collapse(out, text_of, audio)
        text = self._tokenizer.decode(out.tokens)
        confidence = out.avg_logprob
        tokens, stop = out.tokens, out.stop_reason
        if noise.is_no_speech(out.no_speech_prob, confidence):
            text, tokens, stop = "", [], "no_speech"
        elif guards.is_too_repetitive(text):
            text, tokens, stop = "", [], "repetitive"
        closing = self._tokenizer.closing_punctuation(tokens)
        # out.logprobs[i] is the log-probability of out.tokens[i] (the end-of-text one follows).
        punctuation_prob = None if closing is None else min(1.0, math.exp(out.logprobs[closing]))
        return TranscriptResult(
            text=text,
            tokens=tokens,
            confidence=confidence,
            no_speech_prob=out.no_speech_prob,
            encode_ms=round(encode_ms, 2),
            decode_ms=round(decode_ms, 2),
            duration_s=round(duration, 3),
            stop_reason=stop,
            temperature=out.temperature,
            window_s=float(text_window),
            punctuation_prob=punctuation_prob,
            language=code,
            language_prob=None if language_prob is None else round(language_prob, 4),
            draft_tokens=drafted,
            draft_accepted=accepted,
        )

    def _decode(
        self,
        start: StartSequence,
        max_new: int,
        beam: int,
        bias: HotwordBias | None,
        abandon: threading.Event | None,
        draft: Sequence[int] = (),
        repeats: RepeatCut | None = None,
    ) -> tuple[Prefix, Decoded, tuple[int, int]]:
        """The start sequence's prefill and the search from it; returns the prefill of the start
        sequence alone too (a retry or the fallback decodes from it), and the draft's tokens and
        how many were accepted.

        With a draft, the draft's head that greedy decoding agrees with is taken in the prefill's
        one call and only the rest is searched (with `beam`), the beam covering only the tail after the
        head (and waiting for more ended candidates while the best has no closing mark:
        search.UNCLOSED_PATIENCE).
        """
        if not self.options.draft:
            draft = ()
        draft = [int(t) for t in draft if 0 <= int(t) < self._rules.eot][: max(0, max_new - 1)]
        room = self._decoder.max_positions - len(start.tokens) - max_new
        draft = draft[: max(0, room)]
        if not draft:
            prefix = self._decoder.prefill(list(start.tokens), start.sot_index)
            out = search.beam_search(
                self._decoder, self._rules, prefix, max_new, beam, bias, abandon, repeat_cut=repeats
            )
            return prefix, out, (0, 0)
        full = self._decoder.prefill([*start.tokens, *draft], start.sot_index, draft=len(draft))
        margin = self.options.draft_margin if beam > 1 else 0.0
        verified = search.verified_draft(self._rules, full, draft, max_new, bias, margin)
        self.draft_stats.add(len(draft), verified.accepted)
        out = search.beam_search(
            self._decoder,
            self._rules,
            verified.prefix,
            max_new,
            beam,
            bias,
            abandon,
            start=verified.start,
            closing=self._tokenizer.closing_punctuation,
            repeat_cut=repeats,
        )
        return full.cut(len(start.tokens)), out, (len(draft), verified.accepted)

    def _encode(self, audio: np.ndarray, window: float) -> None:
        """Encode `audio` zero-padded to `window` seconds; the decoder reads this audio from now on."""
        padded = np.zeros(int(window * SAMPLE_RATE), np.float32)
        padded[: len(audio)] = audio
        mel = self._mel(padded)
        self._decoder.set_audio({})  # drop the views of the previous run's outputs first
        self._decoder.set_audio(self._encoder.run(mel[: 2 * (len(mel) // 2)]))

    def _bias(self, hotwords: tuple[str, ...]) -> HotwordBias | None:
        if hotwords not in self._biases:
            if len(self._biases) > 64:  # per-stream sets are few; a caller inventing new ones each time is not
                self._biases.clear()
            self._biases[hotwords] = HotwordBias.build(self._tokenizer, hotwords, self.options.hotword_boost)
        return self._biases[hotwords]


def default_options() -> DecodeOptions:
    from voxnode.config.asr import AsrConfig

    return DecodeOptions.from_config(AsrConfig())
