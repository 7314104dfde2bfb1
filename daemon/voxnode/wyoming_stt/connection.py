"""One Wyoming client connection: its events in order, its answers through one writer.

Events handled: `describe` (-> `info`), `transcribe` (opens a request; optional: `audio-start` opens
one too), `audio-start`, `audio-chunk`, `audio-stop` (-> `transcript`), `ping` (-> `pong`). With
partials on: `transcript-start` before the first `transcript-chunk`, chunks while audio streams,
then the rest after audio-stop, `transcript`, `transcript-stop` (the order wyoming documents; the
chunks join into the transcript when the final begins with the words already streamed).

Bad input gets an `error` event with a code and a sentence, then the connection is closed; a
request past `wyoming.max_audio_s` likewise. A client that disconnects mid-request: its queued
jobs are withdrawn; nothing else is affected. What a connection may hold (replies queued, a slot,
audio) and for how long: limits.py.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from wyoming.asr import Transcribe, Transcript, TranscriptChunk, TranscriptStart, TranscriptStop
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.event import Event, async_write_event
from wyoming.info import Describe, Info
from wyoming.ping import Ping, Pong

from voxnode import text as script
from voxnode.frontend.chain import FrontEnd, speech_only
from voxnode.stream.scheduler import DecodeScheduler

from .convert import FormatError
from .limits import MAX_QUEUED_REPLIES, REPLY_STALL_S, Lease, Slots
from .protocol import BadEvent, error_event, read_event
from .request import AudioTooLong, RequestParams, TranscribeRequest, remainder

log = logging.getLogger(__name__)

LINGER_S = 1.0  # at most this long reading a client's leftovers before closing (see _close)
WRITER_WAIT_S = 5.0  # at most this long for the replies still queued when a connection ends
# An evicted connection (limits.Roster) gets its `busy` error this long, not WRITER_WAIT_S + LINGER_S:
# its socket is no longer counted, so a flood of new connections must not keep thousands closing.
EVICTED_CLOSE_S = 0.2
# What the configured model can do (WyomingServer.languages): ("en",) for tiny.en; a request for
# another language is refused.
DEFAULT_LANGUAGES = ("en",)


@dataclass
class ServerStats:
    connections: int = 0  # open now
    connections_total: int = 0
    refused_busy: int = 0  # requests refused: every slot taken (wyoming.max_clients)
    evicted: int = 0  # connections without a request closed to make room for a new one (limits.py)
    stalled: int = 0  # clients that read none of their replies for REPLY_STALL_S, disconnected
    requests: int = 0
    transcripts: int = 0
    errors: int = 0  # error events sent (bad input, too long, refused language, recogniser failed)
    abandoned: int = 0  # requests whose client went away before audio-stop
    audio_s: float = 0.0  # audio transcribed
    decode_s: float = 0.0  # engine time for the finals
    last_final_ms: float | None = None  # audio-stop -> transcript ready, the last request

    def as_dict(self) -> dict:
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in vars(self).items()}


class Connection:
    def __init__(
        self,
        key: str,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        scheduler: DecodeScheduler,
        params: RequestParams,
        info: Callable[[], Info],
        stats: ServerStats,
        idle_timeout_s: float,
        languages: tuple[str, ...] = DEFAULT_LANGUAGES,
        slots: Slots | None = None,
    ):
        self.key = key
        self._languages = languages
        self._reader, self._writer = reader, writer
        self._sched = scheduler
        self._params = params
        self._info = info
        self._stats = stats
        self._idle_timeout_s = idle_timeout_s
        # Unbounded as a type, bounded by the reader: it reads no further event while
        # MAX_QUEUED_REPLIES are queued (_room_for_replies).
        self._out: asyncio.Queue[Event | None] = asyncio.Queue()
        self._written = asyncio.Event()  # set by the writer after each event it wrote
        self.lease = Lease(slots if slots is not None else Slots(1 << 30), params.max_audio_s)
        self._vad: FrontEnd | None = None  # built at the first audio that needs it; kept for the next request
        self._read_task: asyncio.Task | None = None
        self._evicted = ""  # why limits.Roster closed it
        self._abort = False  # the client does not read: close without waiting for the writer
        self.request: TranscribeRequest | None = None
        self._streaming_started = False
        self._language: str | None = None
        self.answering = False  # between audio-stop and the transcript queued for writing

    async def run(self) -> None:
        writer_task = asyncio.create_task(self._write_all())
        self._read_task = asyncio.create_task(self._read_all())
        try:
            await self._read_task
        except asyncio.CancelledError:
            if not self._evicted or not self._read_task.cancelled():
                raise  # the server is stopping
            self._stats.errors += 1  # not logged one by one: limits.Roster logs a count
            self._send(error_event("busy", self._evicted))
        finally:
            self._read_task.cancel()  # where run() itself was cancelled
            if self.request is not None and not self.request.closed:
                self.request.abandon()
                self._stats.abandoned += 1
                log.info("wyoming %s: client left in the middle of a request; its jobs are withdrawn", self.key)
            self.lease.give()
            self._out.put_nowait(None)
            wait_s = 0.0 if self._abort else EVICTED_CLOSE_S if self._evicted else WRITER_WAIT_S
            try:
                await asyncio.wait_for(writer_task, wait_s)
            except (TimeoutError, asyncio.CancelledError):
                writer_task.cancel()
            if self._abort:
                self._writer.transport.abort()
            else:
                await self._close(EVICTED_CLOSE_S if self._evicted else LINGER_S)

    def evict(self, why: str) -> None:
        """limits.Roster: this connection, holding no slot, makes room for a new one."""
        self._evicted = why
        self._stats.evicted += 1
        if self._read_task is not None:
            self._read_task.cancel()

    def abort(self) -> None:
        """The server is stopping and waited long enough: drop the connection now."""
        self._abort = True
        self._writer.transport.abort()

    async def refuse(self, code: str, text: str) -> None:
        """Tell the client why it is not served, and close."""
        self._stats.errors += 1
        try:
            await async_write_event(error_event(code, text), self._writer)
        except (ConnectionError, OSError):
            pass
        await self._close()

    async def _close(self, linger_s: float = LINGER_S) -> None:
        """Close so that what we wrote last (an error event) reaches the client: closing a socket with
        unread input makes the kernel send a reset, and the client may lose our last event with it. So
        our side is shut first and the client's leftovers are read and dropped for a moment."""
        try:
            if self._writer.can_write_eof() and not self._writer.is_closing():
                self._writer.write_eof()
            async with asyncio.timeout(linger_s):
                while await self._reader.read(65536):
                    pass
        except (TimeoutError, ConnectionError, OSError):
            pass
        self._writer.close()

    # ---- reading -----------------------------------------------------------------------------

    async def _read_all(self) -> None:
        while True:
            if not await self._room_for_replies():
                self._stats.stalled += 1
                self._abort = True
                log.warning(
                    "wyoming %s: the client read none of its replies for %g s (%d queued); disconnected",
                    self.key,
                    REPLY_STALL_S,
                    self._out.qsize(),
                )
                return
            timeout, why = self.lease.read_timeout(self._idle_timeout_s)
            # Not wait_for: on 3.11 it drops a cancel when the read has completed (gh-86296), as it has
            # while a flood is buffered; a 200,000-request flood then held SIGTERM 7.4 s (now 1.4 s).
            try:
                async with asyncio.timeout(timeout):
                    event = await read_event(self._reader)
            except TimeoutError:
                self._fail("timeout", why)
                return
            except BadEvent as e:
                self._fail("bad-event", str(e))
                return
            except (ConnectionError, OSError):
                return
            if event is None:
                return
            try:
                if not await self._handle(event):
                    return
            except (KeyError, TypeError, ValueError, AttributeError) as e:
                self._fail("bad-event", f"{event.type}: missing or wrong field ({type(e).__name__}: {e})")
                return
            # A read from a buffered flood does not yield: one event at a time, the other clients too.
            await asyncio.sleep(0)

    async def _room_for_replies(self) -> bool:
        """Wait while MAX_QUEUED_REPLIES replies are queued; False if the client read none for REPLY_STALL_S."""
        while self._out.qsize() >= MAX_QUEUED_REPLIES:
            self._written.clear()
            try:
                async with asyncio.timeout(REPLY_STALL_S):  # not wait_for: it may drop a cancel (_read_all)
                    await self._written.wait()
            except TimeoutError:
                return False
        return True

    def _take_slot(self) -> bool:
        if self.lease.held:
            return True
        if self.lease.take():  # tests/wyoming_stt/test_limits.py waits on this line
            log.debug("wyoming %s: took a slot (%d of %d held)", self.key, self.lease.slots.held, self.lease.slots.size)
            return True
        size = self.lease.slots.size
        self._stats.refused_busy += 1
        log.warning("wyoming %s: refused a request: %d being transcribed already (wyoming.max_clients)", self.key, size)
        self._fail("busy", f"{size} requests being transcribed already (wyoming.max_clients); try again")
        return False

    def _vad_frontend(self) -> FrontEnd:
        """The connection's VAD (partials only), built at the first audio that needs it and kept for its
        next requests, as a microphone's runs on from one utterance to the next: building one
        (Silero's interpreter) costs ~2 ms, which every `transcribe` + `audio-start` used to pay."""
        if self._vad is None:
            self._vad = FrontEnd(speech_only(self._params.frontend))
        return self._vad

    async def _handle(self, event: Event) -> bool:
        if Describe.is_type(event.type):
            self._send(self._info().event())
        elif Ping.is_type(event.type):
            self._send(Pong(text=Ping.from_event(event).text).event())
        elif Transcribe.is_type(event.type):
            language = Transcribe.from_event(event).language
            if language is not None and not isinstance(language, str):
                self._fail("bad-event", f"transcribe: language {language!r} is not a string")
                return False
            code = language.replace("_", "-").split("-")[0].lower() if language else None
            if code is not None and code not in self._languages:
                self._fail("unsupported-language", f"language {language!r}: this model speaks {self._spoken()}")
                return False
            self._language = code
            self._new_request()
        elif AudioStart.is_type(event.type):
            start = AudioStart.from_event(event)
            request = self.request if self.request is not None and self.request.converter is None else None
            request = request or self._new_request()
            try:
                request.start(start.rate, start.width, start.channels)
            except FormatError as e:
                self._fail("bad-audio-format", str(e))
                return False
        elif AudioChunk.is_type(event.type):
            request = self._started_request("audio-chunk")
            if request is None:
                return False
            chunk = AudioChunk.from_event(event)
            c = request.converter
            assert c is not None  # _started_request checked it
            if (chunk.rate, chunk.width, chunk.channels) != (c.rate, c.width, c.channels):
                self._fail(
                    "bad-audio-format",
                    f"audio-chunk is {chunk.rate} Hz/{chunk.width} B/{chunk.channels} ch, "
                    f"audio-start said {c.rate}/{c.width}/{c.channels}",
                )
                return False
            if not self._take_slot():
                request.abandon()
                return False
            try:
                request.add(chunk.audio or b"")
            except AudioTooLong as e:
                request.abandon()
                self._fail("audio-too-long", str(e))
                return False
        elif AudioStop.is_type(event.type):
            request = self._started_request("audio-stop")
            if request is None:
                return False
            await self._finish(request)
        # Anything else (a satellite's or a TTS event) is not ours to answer: ignored, as wyoming servers do.
        return True

    def _started_request(self, event_type: str) -> TranscribeRequest | None:
        """The open request that audio-start began, for an audio-chunk or audio-stop; None (after
        answering no-audio-start) when there is none."""
        request = self.request
        if request is None or request.converter is None or request.closed:
            self._fail("no-audio-start", f"{event_type} before audio-start")
            return None
        return request

    def _new_request(self) -> TranscribeRequest:
        if self.request is not None and not self.request.closed:
            self.request.abandon()
        self.lease.give()
        loop = asyncio.get_running_loop()
        # A client's language is decoded as such (with [asr] language = "auto" it may be any of the
        # model's); without one, [asr] language decides (detection under "auto").
        self.request = TranscribeRequest(
            self.key, self._sched, self._params, loop, self._on_partial, language=self._language, vad=self._vad_frontend
        )
        self._streaming_started = False
        self._stats.requests += 1
        return self.request

    # ---- answering ---------------------------------------------------------------------------

    def _on_partial(self, request: TranscribeRequest, words: list[str]) -> None:
        if request is not self.request:
            return
        self._start_streaming()
        sent = request.sent_words  # already extended by `words`; the word before them was streamed last
        sep = script.glue(sent[-len(words) - 1], words[0]) if len(sent) > len(words) else ""
        self._send(TranscriptChunk(text=sep + script.join(words)).event())

    def _start_streaming(self) -> None:
        if self._params.partials.enabled and not self._streaming_started:
            self._streaming_started = True
            self._send(TranscriptStart(language=self._expected_language()).event())

    async def _finish(self, request: TranscribeRequest) -> None:
        self.answering = True
        try:
            await self._answer(request)
        finally:
            self.answering = False
            self.lease.give()

    async def _answer(self, request: TranscribeRequest) -> None:
        loop = asyncio.get_running_loop()
        stopped = loop.time()
        future = request.finish()
        log.debug("wyoming %s: final submitted (%.2f s of audio)", self.key, request.audio_s)
        outcome = await future
        if outcome.error:
            self._fail("transcription-failed", outcome.error)
            return
        st = self._stats
        st.transcripts += 1
        st.audio_s += outcome.audio_s
        st.decode_s += outcome.decode_s
        st.last_final_ms = (loop.time() - stopped) * 1e3
        log.debug(
            "wyoming %s: %.2f s of audio -> %r (decode %.0f ms, queued %.0f ms, stop -> transcript %.0f ms)",
            self.key,
            outcome.audio_s,
            outcome.text,
            outcome.decode_s * 1e3,
            outcome.wait_s * 1e3,
            st.last_final_ms,
        )
        # What the text was decoded as: the client's, the configured, or the detected language.
        decoded = outcome.result.language if outcome.result is not None else ""
        language = decoded or self._expected_language()
        if self._params.partials.enabled:
            self._start_streaming()
            rest = remainder(request.sent_words, outcome.text)
            if rest:
                self._send(TranscriptChunk(text=rest).event())
            self._send(Transcript(text=outcome.text, language=language).event())
            self._send(TranscriptStop().event())
        else:
            self._send(Transcript(text=outcome.text, language=language).event())

    def _expected_language(self) -> str | None:
        """The language a transcript will be in before it is decoded: the client's, else the model's
        one language; None where it is detected ([asr] language = "auto", no language asked)."""
        if self._language:
            return self._language
        return self._languages[0] if len(self._languages) == 1 else None

    def _spoken(self) -> str:
        langs = self._languages
        return ", ".join(langs) if len(langs) <= 8 else f"{len(langs)} languages ({', '.join(langs[:8])}, ...)"

    def _fail(self, code: str, text: str) -> None:
        self._stats.errors += 1
        log.info("wyoming %s: %s: %s", self.key, code, text)
        self._send(error_event(code, text))

    def _send(self, event: Event) -> None:
        self._out.put_nowait(event)

    async def _write_all(self) -> None:
        while (event := await self._out.get()) is not None:
            try:
                await async_write_event(event, self._writer)
            except (ConnectionError, OSError):
                return  # the client is gone; the reader notices too
            self._written.set()
