"""The `whisper-litert` backend: Whisper tiny.en converted to TFLite, run by LiteRT with XNNPACK.

WhisperEngine is one loaded Whisper model, shared by every audio stream of the process.

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
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from voxnode.asr import guards
from voxnode.asr.decoder import DecoderRunner
from voxnode.asr.encoder import EncoderRunner
from voxnode.asr.fifo_lock import FifoLock
from voxnode.asr.locate import default_model_dir
from voxnode.asr.mel import SAMPLE_RATE, LogMel
from voxnode.asr.model_files import ModelFiles, open_model_dir
from voxnode.asr.recognizer import EngineInfo, Recognizer, TranscriptResult
from voxnode.asr.runtime import default_num_threads, delegation, load_runtime, release_file_pages
from voxnode.asr.tokenizer import Tokenizer
from voxnode.errors import ModelError

if TYPE_CHECKING:
    from voxnode.config.asr import AsrConfig

ENGINE = "whisper-litert"

log = logging.getLogger(__name__)

MAX_SECONDS = 30.0
# Whisper saw speech followed by zero padding in training; a second of it lets
# the model hear the end of the last word. In short windows greedy decoding
# sometimes misses the end-of-text token and loops ("10 of clubs 10 of clubs
# ..."): below 6 s that happened often on pocketsphinx-testdata, at 10 s never.
# So we encode at least 6 s and, only when decoding did not end, retry once
# with a longer window. Windows are whole seconds so the interpreters are
# resized for a handful of shapes only.
PAD_SECONDS = 1.0
MIN_WINDOW_SECONDS = 6.0
RETRY_WINDOW_SECONDS = 10.0


@dataclass(frozen=True)
class LiteRtEngineInfo(EngineInfo):
    xnnpack_applied: bool
    ops_total: int
    ops_not_delegated: int
    not_delegated_ops: tuple[str, ...] = ()

    @property
    def fully_accelerated(self) -> bool:
        return self.xnnpack_applied and self.ops_not_delegated == 0


class WhisperEngine(Recognizer):
    def __init__(
        self,
        files: ModelFiles,
        encoder: EncoderRunner,
        decoder: DecoderRunner,
        tokenizer: Tokenizer,
        info: LiteRtEngineInfo,
    ) -> None:
        self.files = files
        self._encoder = encoder
        self._decoder = decoder
        self._tokenizer = tokenizer
        self._mel = LogMel(int(files.config["n_mels"]))
        self._lock = FifoLock()
        self.info = info

    @classmethod
    def from_config(cls, config: AsrConfig) -> WhisperEngine:
        return cls.load(default_model_dir(config.model_dir), config.num_threads or None)

    @classmethod
    def load(cls, model_dir: Path, num_threads: int | None = None, variant: str | None = None) -> WhisperEngine:
        """Check and load the model; raises ModelError saying what is wrong."""
        t0 = time.perf_counter()
        files = open_model_dir(Path(model_dir), variant)
        runtime = load_runtime()
        threads = num_threads if num_threads and num_threads > 0 else default_num_threads()
        interpreters = {}
        for part, path in (("encoder", files.encoder), ("decoder", files.decoder)):
            try:
                it = runtime.interpreter_class(model_path=str(path), num_threads=threads)
                it.allocate_tensors()  # the delegate is applied here
            except (ValueError, RuntimeError) as e:
                raise ModelError(f"{path}: cannot be loaded by {runtime.name} {runtime.version}: {e}") from None
            interpreters[part] = it
            if delegation(it).applied:
                # Each part right after its delegate packed the weights, so the two
                # mappings are never resident at once: that bounds the peak RSS.
                release_file_pages(path)
        cfg = files.config
        try:
            enc_pos = np.load(files.encoder_positions)
            dec_pos = np.load(files.decoder_positions)
        except (ValueError, OSError) as e:
            raise ModelError(f"{files.root}: positional tables unreadable: {e}") from None
        encoder = EncoderRunner(interpreters["encoder"], enc_pos, int(cfg["n_decoder_layers"]))
        decoder = DecoderRunner(interpreters["decoder"], dec_pos, cfg)
        tokenizer = Tokenizer.from_file(files.vocabulary, int(cfg["tokens"]["eot"]))

        reports = [delegation(it) for it in interpreters.values()]
        left = tuple(op for r in reports for op in r.not_delegated)
        info = LiteRtEngineInfo(
            engine=ENGINE,
            runtime=runtime.name,
            runtime_version=runtime.version,
            model=files.name,
            quantization=files.variant,
            xnnpack_applied=all(r.applied for r in reports),
            ops_total=sum(r.ops_total for r in reports),
            ops_not_delegated=len(left),
            num_threads=threads,
            load_ms=round((time.perf_counter() - t0) * 1000, 1),
            not_delegated_ops=left,
        )
        if left or not info.xnnpack_applied:
            log.warning(
                "XNNPACK did not take the whole model: %d of %d ops run on slow reference kernels (%s); "
                "expect several times slower transcription",
                len(left),
                info.ops_total,
                ", ".join(sorted(set(left))) or "no delegate applied",
            )
        log.info("speech model loaded: %s", info.as_dict())
        return cls(files, encoder, decoder, tokenizer, info)

    def transcribe(self, audio: np.ndarray) -> TranscriptResult:
        """float32 mono 16 kHz audio in [-1, 1], at most 30 s -> text and timings."""
        audio = np.asarray(audio, dtype=np.float32).reshape(-1)
        duration = len(audio) / SAMPLE_RATE
        if duration > MAX_SECONDS + 1e-6:
            raise ValueError(f"audio is {duration:.1f} s; the engine takes at most {MAX_SECONDS:.0f} s per call")
        if not np.all(np.isfinite(audio)):
            raise ValueError("audio contains NaN or infinite samples")
        if len(audio) == 0 or float(np.max(np.abs(audio))) < guards.SILENCE_PEAK:
            return TranscriptResult("", [], 0.0, 1.0, 0.0, 0.0, duration, "silence")
        window = min(MAX_SECONDS, max(MIN_WINDOW_SECONDS, math.ceil(duration + PAD_SECONDS)))
        with self._lock:
            encode_ms, decode_ms, out = self._run(audio, window, duration)
            if out.stop_reason != "eot" and window < MAX_SECONDS:
                # No end-of-text: the short window made greedy decoding loop. A longer
                # window (closer to Whisper's 30 s training windows) nearly always ends.
                window = min(MAX_SECONDS, max(RETRY_WINDOW_SECONDS, 2 * window))
                enc2, dec2, retry = self._run(audio, window, duration)
                encode_ms, decode_ms = encode_ms + enc2, decode_ms + dec2
                if retry.stop_reason == "eot":
                    out = retry
        text = self._tokenizer.decode(out.tokens)
        confidence = float(np.mean(out.logprobs)) if out.logprobs else 0.0
        tokens, stop = out.tokens, out.stop_reason
        if guards.is_no_speech(out.no_speech_prob, confidence):
            text, tokens, stop = "", [], "no_speech"
        elif guards.is_too_repetitive(text):
            text, tokens, stop = "", [], "repetitive"
        return TranscriptResult(
            text=text,
            tokens=tokens,
            confidence=confidence,
            no_speech_prob=out.no_speech_prob,
            encode_ms=round(encode_ms, 2),
            decode_ms=round(decode_ms, 2),
            duration_s=round(duration, 3),
            stop_reason=stop,
        )

    def _run(self, audio: np.ndarray, window: float, duration: float):
        """Encode `audio` zero-padded to `window` seconds and decode greedily: (encode_ms, decode_ms, Decoded)."""
        padded = np.zeros(int(window * SAMPLE_RATE), np.float32)
        padded[: len(audio)] = audio
        t0 = time.perf_counter()
        mel = self._mel(padded)
        cross = self._encoder.run(mel[: 2 * (len(mel) // 2)])
        t1 = time.perf_counter()
        out = self._decoder.greedy(cross, guards.max_new_tokens(duration))
        t2 = time.perf_counter()
        return (t1 - t0) * 1000, (t2 - t1) * 1000, out
