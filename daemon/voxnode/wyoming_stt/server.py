"""The Wyoming speech-to-text server: a Component that owns one thread running an asyncio loop.

Started after the recognition component (it submits to its decode scheduler) and stopped before it,
so the finals of requests in flight are still decoded and answered within the shutdown deadline.
The listening socket is bound in `start()`, so a port in use stops start-up with a clear error.
Each connection is one `Connection`; `wyoming.max_clients` requests transcribe at once, and up to
`limits.connection_cap` connections are open (limits.py: what a connection may hold).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import socket
import threading
import time

from wyoming.info import AsrModel, AsrProgram, Attribution, Info

from voxnode import __version__
from voxnode.config import Config
from voxnode.config.asr import WHISPER_LANGUAGES
from voxnode.config.mqtt import node_id_for
from voxnode.config.wording import cannot_listen
from voxnode.errors import ConfigError
from voxnode.lifecycle import Component
from voxnode.stream.params import frontend_params, partial_params, speech_text
from voxnode.stream.recognition import Recognition
from voxnode.threads import NamedThread

from .announce import Announcement
from .connection import LINGER_S, WRITER_WAIT_S, Connection, ServerStats
from .limits import Roster, Slots, connection_cap
from .protocol import MAX_HEADER_BYTES
from .request import RequestParams

log = logging.getLogger(__name__)

START_TIMEOUT_S = 10.0
# After the shutdown deadline: how long cancelled connections get to end (their last replies and
# the linger of Connection._close) before their sockets are dropped; the loop closes only then,
# with nothing left on it (no "Event loop is closed" from a transport closed after it).
CLOSE_WAIT_S = WRITER_WAIT_S + LINGER_S + 0.5
VOXNODE_URL = "https://github.com/voxnode/voxnode"
WHISPER_ATTRIBUTION = Attribution(name="OpenAI", url="https://github.com/openai/whisper")


def request_params(config: Config) -> RequestParams:
    """The microphones' builders (stream/params.py), so a request is heard, cut into partials and
    cleaned up as a microphone's utterance is."""
    return RequestParams(
        frontend=frontend_params(config),
        partials=partial_params(config),
        speech=speech_text(config),
        max_audio_s=config.wyoming.max_audio_s,
        prompt=config.asr.prompt,
    )


class WyomingServer(Component):
    def __init__(self, config: Config, recognition: Recognition):
        self.config = config
        self.wyoming = config.wyoming
        self.name = self.wyoming.name or f"voxnode {node_id_for(config.mqtt)}"
        self._recognition = recognition
        self._params = request_params(config)
        self.stats = ServerStats()
        self._ids = itertools.count(1)
        self._sock: socket.socket | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._start_error: BaseException | None = None
        self._stop: asyncio.Event | None = None
        self._deadline = 0.0
        self._tasks: dict[asyncio.Task, Connection] = {}
        self._slots = Slots(self.wyoming.max_clients)
        self._roster = Roster(connection_cap(self.wyoming.max_clients), lambda line: log.warning("wyoming: %s", line))
        self.port = 0  # bound port (wyoming.port, or the one the OS chose for port 0 in tests)

    # ---- Component ------------------------------------------------------------------------------

    def start(self) -> None:
        w = self.wyoming
        try:
            family = socket.AF_INET6 if ":" in w.host else socket.AF_INET
            self._sock = socket.create_server((w.host, w.port), family=family, dualstack_ipv6=w.host == "::")
        except OSError as e:
            # The key and hint fit the cause: before, 192.0.2.1 (not this machine's address) was asked
            # whether another Wyoming server used the port, and the line opened "wyoming.host/port =".
            in_use = "is another Wyoming server (wyoming-faster-whisper) using the port?"
            raise ConfigError(cannot_listen("wyoming.host", w.host, "wyoming.port", w.port, e, in_use)) from None
        self.port = self._sock.getsockname()[1]
        self._loop = asyncio.new_event_loop()
        self._thread = NamedThread(target=self._run, name="wyoming", daemon=True)
        self._thread.start()
        if not self._ready.wait(START_TIMEOUT_S) or self._start_error is not None:
            self.stop(time.monotonic())
            raise ConfigError(f"wyoming: the server did not start: {self._start_error or 'timed out'}")
        log.info("wyoming: speech-to-text server on %s:%d (%s)", w.host, self.port, self.name)

    def stop(self, deadline: float) -> None:
        """Refuse new connections; requests waiting for their final get it until `deadline`; then close."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        self._deadline = deadline
        if self._stop is not None:
            try:
                loop.call_soon_threadsafe(self._stop.set)
            except RuntimeError:
                pass  # the loop already ended
        thread.join(max(0.0, deadline - time.monotonic()) + CLOSE_WAIT_S + 2.0)
        if thread.is_alive():
            log.warning("wyoming: the server thread did not end in time")
        elif not loop.is_closed():
            loop.close()
        log.info("wyoming stopped: %s", self.stats.as_dict())

    def health(self) -> dict:
        """The health report's "wyoming" section."""
        return {"host": self.wyoming.host, "port": self.port, **self.stats.as_dict()}

    # ---- the loop's thread ----------------------------------------------------------------------

    def _run(self) -> None:
        loop = self._loop
        assert loop is not None
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._serve())
        except BaseException as e:  # noqa: BLE001 - reported to start() or logged; the thread must end cleanly
            if not self._ready.is_set():
                self._start_error = e
                self._ready.set()
            else:
                log.exception("wyoming: the server failed")
        finally:
            # Nothing left pending when stop() closes the loop: a task destroyed pending logs an error
            # and its `finally` then runs on a closed loop ("Event loop is closed").
            leftover = asyncio.all_tasks(loop)
            for task in leftover:
                task.cancel()
            if leftover:
                loop.run_until_complete(asyncio.wait(leftover, timeout=0.5))
            # Callbacks the closed transports scheduled (connection_lost) run before the loop closes.
            loop.run_until_complete(asyncio.sleep(0))
            loop.run_until_complete(loop.shutdown_asyncgens())

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._accept, sock=self._sock, limit=MAX_HEADER_BYTES)
        announcement = None
        if self.wyoming.zeroconf:
            announcement = Announcement(self.name.replace(" ", "-"), self.port)
            await announcement.register()
        self._ready.set()
        await self._stop.wait()
        server.close()
        await self._drain()
        if announcement is not None:
            await announcement.close()

    async def _drain(self) -> None:
        """Connections waiting for a final get it until the deadline; then every connection is closed:
        cancelled, given CLOSE_WAIT_S to end, then dropped."""
        while any(c.answering for c in self._tasks.values()):
            if time.monotonic() >= self._deadline:
                break
            await asyncio.sleep(0.02)
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=CLOSE_WAIT_S)
        for conn in self._tasks.values():
            conn.abort()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=1.0)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # A colon never appears in a stream name (config/audio.py), so a request's key cannot
        # collide with a microphone's in the scheduler's one-job-per-key rule.
        key = f"wyoming:{next(self._ids)}"
        conn = Connection(
            key,
            reader,
            writer,
            self._recognition.scheduler,
            self._params,
            self.info,
            self.stats,
            self.wyoming.idle_timeout_s,
            self.languages(),
            self._slots,
        )
        st = self.stats
        task = asyncio.current_task()
        assert task is not None
        self._tasks[task] = conn
        try:
            if self._stop is not None and self._stop.is_set():
                await conn.refuse("stopping", "the server is shutting down")
                return
            self._roster.add(conn)  # past the cap, the connection longest without a request is closed
            st.connections += 1
            st.connections_total += 1
            try:
                await conn.run()
            finally:
                st.connections -= 1
                self._roster.remove(conn)
        except asyncio.CancelledError:
            pass  # the server is stopping: Connection.run withdrew the request's jobs
        finally:
            self._tasks.pop(task, None)

    def languages(self) -> tuple[str, ...]:
        """What the configured model can transcribe: `[asr] language` where it names one ("en" for
        tiny.en), else (`"auto"`, a model that detects the language) every language the loaded
        model declares (`Recognizer.capabilities`)."""
        configured = self.config.asr.language
        if configured != "auto":
            return (configured,)
        recognizers = self._recognition.recognizers
        known = recognizers[0].capabilities.languages if recognizers else ()
        return known or tuple(WHISPER_LANGUAGES)

    def info(self) -> Info:
        """The answer to `describe`: the model and the language it speaks."""
        engine = self._recognition.engine_info()
        model = engine.model if engine is not None else "whisper"
        description = f"{model} on {engine.runtime}" if engine is not None else model
        return Info(
            asr=[
                AsrProgram(
                    # Home Assistant names the config entry and the speech-to-text entity after this.
                    name=self.name,
                    description=f"voxnode speech-to-text ({self.name})",
                    attribution=Attribution(name="voxnode", url=VOXNODE_URL),
                    installed=True,
                    version=__version__,
                    models=[
                        AsrModel(
                            name=model,
                            description=description,
                            attribution=WHISPER_ATTRIBUTION,
                            installed=True,
                            version=None,
                            languages=list(self.languages()),
                        )
                    ],
                    supports_transcript_streaming=self._params.partials.enabled,
                )
            ]
        )
