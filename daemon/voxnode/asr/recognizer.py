"""What every speech-recognition backend offers the rest of voxnode: the `Recognizer` interface.

One package or module per backend (asr/whisper/, ...), each with a `Recognizer` subclass;
config/asr.py `ENGINES` names them and asr/backends.py imports the chosen one. Nothing outside
asr/ imports a backend's modules: the daemon, the decode scheduler, health, preflight and
`voxnode transcribe` see only this interface, its typed results and the capabilities it declares.
"""

from __future__ import annotations

import math
import time
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import threading
    from collections.abc import Sequence
    from pathlib import Path

    import numpy as np

    from voxnode.config.asr import AsrConfig


# warm_up's input: 3 s of noise at -50 dBFS RMS, above the engines' silence guard (a silent input is
# answered without running the model) and long enough for the finals' shortest window.
WARM_UP_S = 3.0
WARM_UP_LEVEL = 0.003


class DecodeAbandoned(Exception):  # noqa: N818 - an outcome the caller asked for, not an error
    """`transcribe` stopped early because the caller set its `abandon` event (a partial giving the
    engine up to a final)."""


@dataclass(frozen=True)
class TranscriptResult:
    text: str
    tokens: list[int]
    confidence: float  # mean log-probability per token (0 is certain)
    no_speech_prob: float
    encode_ms: float
    decode_ms: float
    duration_s: float
    # Why decoding stopped: "eot" (the model ended the text itself), else the guard that stopped it
    # (token_cap, repetition, silence, no_speech, repetitive). Engine-neutral code reads
    # `ended_cleanly`, not these names.
    stop_reason: str = "eot"
    temperature: float = 0.0  # > 0: a sample replaced an unsure first decode (temperature fallback)
    window_s: float = 0.0  # length of the window the text came from (audio plus zero padding)
    # The probability the decoder gave the ".", "?" or "!" (closing quotes may follow) that ends
    # `text`, in the hypothesis it chose; None when the text does not end with one. Endpointing
    # reads it: Whisper punctuates fragments too, but less surely (measured 0.2-0.6 vs 0.8-0.95
    # for whole sentences).
    punctuation_prob: float | None = None
    # The language the text was decoded as (a Whisper code: "en", "de", ...): the configured one,
    # or the detected one where `[asr] language = "auto"`, whose probability language_prob then is
    # (None where the language was not detected). "" only for silence under "auto" (nothing decoded).
    language: str = ""
    language_prob: float | None = None
    # A draft handed to transcribe(): its tokens (after clean-up) and how many the decoder accepted.
    draft_tokens: int = 0
    draft_accepted: int = 0

    @property
    def probability(self) -> float:
        """Geometric-mean token probability, exp(confidence), in [0, 1]."""
        return math.exp(self.confidence)

    @property
    def ended_cleanly(self) -> bool:
        """The model ended the text itself (no guard cut it): what endpointing may judge a sentence by."""
        return self.stop_reason == "eot"


@dataclass(frozen=True)
class Capabilities:
    """What a loaded backend can do beyond text from audio, declared once (`Recognizer.capabilities`).
    Engine-neutral code asks these instead of reading one engine's fields, and each has a fallback:

    - `languages`: the codes it transcribes (Wyoming announces them); () = `[asr] language` only.
    - `language_detection`: `language="auto"` works; else the configured language is used.
    - `prompt`, `hotwords`: used by transcribe(); else ignored (the call still works).
    - `drafts`: `TranscriptResult.tokens` handed back as `draft=` are verified in one call; else
      no draft is kept (pipelines decode every time from scratch).
    - `no_speech`: `TranscriptResult.no_speech_prob` is the model's own; else it is 0 and the
      confidence alone tells noise from speech.
    - `punctuation_prob`: `TranscriptResult.punctuation_prob` says how sure a closing mark is; else
      None and a closing mark is taken as it is (endpointing).
    """

    languages: tuple[str, ...] = ()
    language_detection: bool = False
    prompt: bool = False
    hotwords: bool = False
    drafts: bool = False
    no_speech: bool = False
    punctuation_prob: bool = False


@dataclass(frozen=True)
class EngineInfo:
    """What a loaded backend reports about itself (health `model.info`, logs). Backends subclass it
    to add their own figures; `as_dict()` carries them too."""

    engine: str  # the [asr] engine name
    model: str
    runtime: str
    runtime_version: str
    quantization: str
    num_threads: int
    load_ms: float

    @property
    def fully_accelerated(self) -> bool | None:
        """Every op of the model runs on the fast path (XNNPACK for LiteRT); None when it does not apply."""
        return None

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for key, value in d.items():
            if isinstance(value, tuple):
                d[key] = list(value)
        return d


class Recognizer(ABC):
    """One loaded speech model.

    `transcribe()` may be called from any thread; an instance serves one call at a time (callers
    queue), so parallel decoding needs one instance per decode worker.
    """

    info: EngineInfo
    capabilities: Capabilities = Capabilities()  # what it can do; a backend declares its own

    @classmethod
    @abstractmethod
    def from_config(cls, config: AsrConfig) -> Recognizer:
        """Load the model `[asr]` names; raises ModelError saying what is wrong."""

    @classmethod
    def check_model(cls, config: AsrConfig) -> None:
        """Find and check the model's files as loading would, without loading it (`check-config`, a
        reload's checks); raises ModelError saying what is wrong. Default: nothing to check."""
        return None

    @classmethod
    def model_id_file(cls, config: AsrConfig) -> Path | None:
        """The file whose checksum identifies the model's files (fleet node info `model_sha256`), found
        without checking anything; None where there is none."""
        return None

    @abstractmethod
    def transcribe(
        self,
        audio: np.ndarray,
        *,
        role: str = "final",
        prompt: str | None = None,
        hotwords: tuple[str, ...] | list[str] | None = None,
        abandon: threading.Event | None = None,
        language: str | None = None,
        draft: Sequence[int] = (),
    ) -> TranscriptResult:
        """float32 mono 16 kHz audio in [-1, 1], at most 30 s -> text, confidence and timings.

        role "final" asks for the best transcript, "partial" for a quick one (it is replaced
        soon). prompt (text said before) and hotwords (words made more likely) replace the
        configured ones for this call; None keeps them, "" or () means none; so does `language`
        (a code, or "auto"; None: `[asr] language`). Once `abandon` is
        set the call raises DecodeAbandoned at its next chance (between model calls).
        `draft`: tokens the text probably begins with (a partial's of the same utterance); a
        backend that can verify them at once decodes only the rest, one that cannot ignores them
        (`capabilities.drafts` says which).
        """

    def warm_up(self) -> float:
        """Run the model once on faint noise, before the first utterance, so that it does not wait
        for the runtime's one-time work (the first invocation at each shape: XNNPACK sets up its
        kernels, the mapped weights are faulted in). Returns the wall time in ms.

        Measured (tiny.en, 1 thread, x86 here, process CPU of the same 2 s final): the first call
        after loading 92-94 ms, later ones 63-64 (+30 ms, +45 %); after this warm-up the first one is
        62-67 ms. The warm-up costs ~90 ms of CPU: Whisper calls the noise no speech and stops."""
        import numpy as np

        from voxnode.audio.format import SAMPLE_RATE

        noise = np.random.default_rng(0).standard_normal(int(WARM_UP_S * SAMPLE_RATE)) * WARM_UP_LEVEL
        start = time.perf_counter()
        self.transcribe(noise.astype(np.float32), role="final")
        return (time.perf_counter() - start) * 1000

    def close(self) -> bool:
        """Release what the loaded model holds open (files); no call after this. Whoever loaded the
        engine closes it (Recognition.stop for the daemon's own). True when released; False when a
        call was still running (a decode past the stop deadline): the process's exit releases it.
        Default: nothing to release."""
        return True

    def __enter__(self) -> Recognizer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
