"""One Wyoming transcription request: audio in, partials while it streams, the final at audio-stop.

Decoding goes through the daemon's DecodeScheduler, keyed by the connection (`wyoming:N`; no stream
name has a colon, so no request shares a microphone's key), all requests one tenant: the final is
decoded in pieces of at most 8 s (slices.py), FINAL jobs served before any partial but after the
microphones' finals (stream/policy.py); partials are PARTIAL jobs, skipped first when the engine
is behind.

The engine gets the audio (converted to 16 kHz mono) through the same recognition path as a
microphone's and `voxnode transcribe`'s (frontend/recognition.py: the high-pass, and the denoiser
where `frontend.denoise` gives recognition denoised audio), run on every chunk as it arrives.
The VAD runs only to decide when a partial is worth computing: while speech goes on (as the
microphone pipeline does), and only while the client sends in about real time. A client that
uploads a recording in one burst has no use for partials (and a partial still running at
audio-stop would delay the final by its whole duration: a decode cannot be interrupted), so its
audio gets the recognition path only. Measured (scripts/bench/wyoming_server.py): running the VAD on
every frame of a burst upload put 30-80 ms of catching up between the client's audio-stop and the
final's decode. The recognition path costs ~0.02 ms per 20 ms frame with the default config (the
high-pass alone); with an enhancer for recognition it runs on the event loop too (DeepFilterNet:
~1 ms per 20 ms frame here, so a 10 s burst costs ~0.5 s there).

Thread use: `start`, `add`, `finish` and `abandon` run on the server's event loop; decode results
come back on a decode thread and are handed to the loop with `call_soon_threadsafe`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from voxnode import text as script
from voxnode.asr.recognizer import TranscriptResult
from voxnode.audio.format import PERIOD_FRAMES, SAMPLE_RATE
from voxnode.frontend.chain import FrontEnd, FrontEndParams, speech_only
from voxnode.frontend.recognition import RecognitionFilter
from voxnode.stream.jobs import DecodeJob, JobKind, JobOutcome, JobResult
from voxnode.stream.partials import PARTIAL_QUIET_FRAMES, PartialParams, StablePrefix, norm
from voxnode.stream.partials import words as partial_words
from voxnode.stream.scheduler import DecodeScheduler
from voxnode.stream.speech_text import SpeechText

from .convert import AudioConverter
from .slices import Decoded, SlicedFinal

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RequestParams:
    """From [frontend], [vad], [stream] and [wyoming] (wyoming_stt/server.py `request_params`): the
    front-end, partials and published text the microphones get, from the same builders (stream/params.py)."""

    frontend: FrontEndParams
    partials: PartialParams  # partial_max_share does not apply: a request's partials wait for the client's audio
    speech: SpeechText  # text clean-up and the noise verdict, as for the microphones
    max_audio_s: float
    prompt: str = ""  # [asr] prompt: read before each piece of a final (slices.py)


# A request's audio starts wherever the client started sending (a satellite: right after the wake
# word, often a second of silence), unlike a microphone utterance, which the segmenter trims. Whisper's
# no-speech probability then runs high on real speech (0.78 on a 13 s request with 1 s of leading
# silence and four sentences): so, as for the microphones (stream/speech_text.py), a result is
# silenced only when the text is also unlikely.
# Every request's decode times are observed (the voxnode_decode_seconds histogram, label `stream`)
# under this one name, not the request's own key: one key per request would add series without
# bound. The ":" keeps it apart from every stream name (config STREAM_NAME_PATTERN).
OBSERVED_AS = "wyoming:requests"
# All requests share one turn in the decode scheduler, between two of each microphone's
# (stream/jobs.py DecodeJob.tenant); the ":" keeps it apart from every stream name.
TENANT = "wyoming:requests"


class AudioTooLong(Exception):
    pass


@dataclass(frozen=True)
class FinalOutcome:
    text: str  # "" when nothing was said (or the engine judged it noise)
    result: TranscriptResult | None  # None: no audio, or the decode failed / was dropped
    error: str = ""  # why there is no result, for the client
    audio_s: float = 0.0
    decode_s: float = 0.0  # the engine's compute time for the final
    wait_s: float = 0.0  # queued behind other jobs


class TranscribeRequest:
    def __init__(
        self,
        key: str,
        scheduler: DecodeScheduler,
        params: RequestParams,
        loop: asyncio.AbstractEventLoop,
        on_partial: Callable[[TranscribeRequest, list[str]], None],
        language: str | None = None,
        vad: Callable[[], FrontEnd] | None = None,
    ):
        self.key = key
        self.language = language  # the client's (a code); None: [asr] language
        self._sched = scheduler
        self.params = params
        self._loop = loop
        self._on_partial = on_partial
        # Built at the first audio (the VAD only where partials need it): `transcribe` + `audio-start`
        # with no audio cost 3.4 ms each with both built here (Silero's interpreter), 20,000 of them
        # kept the event loop busy for 84 s (scripts/bench/wyoming_limits.py). `vad`: the
        # connection's, kept from one request to the next.
        self._new_vad = vad or (lambda: FrontEnd(speech_only(params.frontend)))
        self._frontend: FrontEnd | None = None  # the VAD, for partials
        self._recognition: RecognitionFilter | None = None  # what the engine hears
        self.converter: AudioConverter | None = None
        self._bytes = 0
        self._parts: list[np.ndarray] = []  # converted audio through the recognition path, float32 [-1, 1]
        self._samples = 0
        self._pending = np.zeros(0, dtype=np.float32)  # not yet a whole frame for the VAD, int16 scale
        self._silence = PARTIAL_QUIET_FRAMES  # VAD frames since the last speech frame
        self._started = time.monotonic()
        self._last_partial_audio_s = 0.0
        self._partial: DecodeJob | None = None
        self._final: SlicedFinal | None = None
        self._final_future: asyncio.Future[FinalOutcome] | None = None
        self.prefix = StablePrefix()
        self.sent_words: list[str] = []  # streamed to the client as transcript-chunk events
        self.closed = False  # finished or abandoned: late partials are ignored

    @property
    def audio_s(self) -> float:
        return self._samples / SAMPLE_RATE

    def start(self, rate: int, width: int, channels: int) -> None:
        """audio-start: the format (raises convert.FormatError)."""
        self.converter = AudioConverter(rate, width, channels)
        self._started = time.monotonic()

    def add(self, payload: bytes) -> None:
        """audio-chunk. Raises AudioTooLong past wyoming.max_audio_s (nothing of it is decoded then)."""
        assert self.converter is not None
        self._bytes += len(payload)
        if self.converter.seconds(self._bytes) > self.params.max_audio_s + 1e-6:
            raise AudioTooLong(f"more than {self.params.max_audio_s:g} s of audio in one request (wyoming.max_audio_s)")
        self._feed(self.converter.convert(payload))
        if self._partial_due():
            self._submit_partial()

    def _feed(self, audio: np.ndarray) -> None:
        if self._recognition is None:
            self._recognition = RecognitionFilter(self.params.frontend)
        self._parts.append(self._recognition.process(audio))
        self._samples += audio.size
        if not self.params.partials.enabled or self.closed:
            return
        if self._ahead() >= self.params.partials.interval_s:
            self._pending = np.zeros(0, dtype=np.float32)  # a burst: no partials, so no VAD
            self._silence = PARTIAL_QUIET_FRAMES
            return
        x = np.concatenate([self._pending, audio * np.float32(32768.0)])
        whole = len(x) - len(x) % PERIOD_FRAMES
        if whole and self._frontend is None:
            self._frontend = self._new_vad()
        for i in range(0, whole, PERIOD_FRAMES):
            assert self._frontend is not None
            speech = self._frontend.process(x[i : i + PERIOD_FRAMES]).speech
            self._silence = 0 if speech else self._silence + 1
        self._pending = x[whole:]

    def _ahead(self) -> float:
        """How far ahead of real time the client sends, in seconds."""
        return self.audio_s - (time.monotonic() - self._started)

    def _partial_due(self) -> bool:
        p = self.params.partials
        if not p.enabled or self.closed or self._silence >= PARTIAL_QUIET_FRAMES:
            return False
        audio_s = self.audio_s
        if audio_s < p.min_audio_s or audio_s - self._last_partial_audio_s < p.interval_s:
            return False
        return self._ahead() < p.interval_s

    def _audio(self) -> np.ndarray:
        return np.concatenate(self._parts).astype(np.float32, copy=False)

    def _submit_partial(self) -> None:
        self._last_partial_audio_s = self.audio_s
        self._partial = DecodeJob(
            self.key,
            JobKind.PARTIAL,
            self._audio(),
            self._partial_done,
            language=self.language,
            observed_as=OBSERVED_AS,
            tenant=TENANT,
        )
        self._sched.submit(self._partial)

    def _partial_done(self, job: DecodeJob, outcome: JobOutcome, result: JobResult) -> None:  # decode thread
        if outcome == JobOutcome.DONE and isinstance(result, TranscriptResult):
            self._post(self._take_partial, result)

    def _take_partial(self, result: TranscriptResult) -> None:  # event loop
        if self.closed:
            return
        text = self.params.speech.of(result)
        if not text:
            return
        if self.prefix.update(text, drop_last=True) is None:
            return
        new = self.prefix.words[len(self.sent_words) :]
        if new:
            self.sent_words += new
            self._on_partial(self, new)

    def finish(self) -> asyncio.Future[FinalOutcome]:
        """audio-stop: the final is decoded from all the audio; the future completes on the loop."""
        fut: asyncio.Future[FinalOutcome] = self._loop.create_future()
        self._final_future = fut
        self.closed = True
        if self._recognition is not None:  # some audio came
            assert self.converter is not None
            self._feed(self.converter.convert(b"", last=True))
            self._parts.append(self._recognition.flush())
        if self._partial is not None and not self._partial.finished:
            self._sched.cancel(self._partial)  # queued: withdrawn; running: its result is ignored
        if not self._samples:
            fut.set_result(FinalOutcome("", None))
            return fut
        self._final = SlicedFinal(
            self._sched,
            self._piece,
            self._audio(),
            self.params.prompt,
            self.params.speech.of,
            lambda decoded: self._post(self._take_final, decoded),  # on a decode thread
        )
        self._final.start()
        return fut

    def _piece(self, audio: np.ndarray, prompt: str | None, language: str | None, on_done: Callable) -> DecodeJob:
        """A piece of the final: background work of the Wyoming tenant (stream/policy.py, rule 3)."""
        return DecodeJob(
            self.key,
            JobKind.FINAL,
            audio,
            on_done,
            prompt=prompt,
            language=language or self.language,
            observed_as=OBSERVED_AS,
            tenant=TENANT,
            background=True,
        )

    def _take_final(self, decoded: Decoded) -> None:  # event loop
        fut = self._final_future
        if fut is None or fut.done():
            return
        if decoded.outcome != JobOutcome.DONE:
            err = decoded.error
            why = f"{decoded.outcome.value}: {err}" if isinstance(err, Exception) else decoded.outcome.value
            fut.set_result(FinalOutcome("", None, f"the recogniser did not transcribe it ({why})", decoded.audio_s))
            return
        timing = {"decode_s": decoded.decode_s, "wait_s": decoded.wait_s}
        fut.set_result(FinalOutcome(decoded.text, decoded.results[0], "", decoded.audio_s, **timing))

    def abandon(self) -> None:
        """The client went away: withdraw what is queued; a decode already running is not waited for."""
        self.closed = True
        if self._partial is not None and not self._partial.finished:
            self._sched.cancel(self._partial)
        if self._final is not None:
            self._final.cancel()

    def _post(self, fn: Callable, *args: object) -> None:
        try:
            self._loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:
            pass  # the server's loop has closed (shutdown): nobody is waiting for this any more


def remainder(sent: list[str], final: str) -> str:
    """What to stream after the partial words already sent so that the chunks join into the final:
    the final's words after them, when the final begins with them (it nearly always does: a word is
    sent only once two hypotheses agree on it); else nothing (the transcript event is what counts)."""
    words = partial_words(final)
    if not sent:
        return final
    if [norm(w) for w in words[: len(sent)]] != [norm(w) for w in sent]:
        return ""
    rest = words[len(sent) :]
    return (script.glue(sent[-1], rest[0]) + script.join(rest)) if rest else ""
