"""Events as JSON lines on stdout (`--stdout`), or as readable lines on the log."""

from __future__ import annotations

import logging
import sys
import threading
from typing import TextIO

from voxnode.audio.levels import LevelReport
from voxnode.delivery.cursor import SpoolCursor
from voxnode.events import Event, TranscriptEvent, WakeEvent, dumps
from voxnode.outputs.base import Output, OutputContext

log = logging.getLogger("voxnode")

REPLAY_BATCH = 500  # finals read from the spool at a time when replaying at start


class StdoutOutput(Output):
    """One JSON object per line; a line is written whole even with many stream threads.

    Durable: a final is acknowledged in the spool once its line is written and flushed, so finals
    stored but not yet printed when the daemon died are printed at the next start (with their seq,
    which a reader uses to drop one it has already seen)."""

    name = "stdout"
    durable = True

    def __init__(self, out: TextIO | None = None):
        self._out = out or sys.stdout
        self._lock = threading.Lock()
        self._cursor: SpoolCursor | None = None
        self.closed = False  # the reader went away (`| head`): nothing more is written or acknowledged

    @classmethod
    def from_context(cls, ctx: OutputContext) -> StdoutOutput | None:
        return cls() if ctx.stdout else None

    def attach(self, cursor: SpoolCursor) -> None:
        self._cursor = cursor

    def start(self) -> None:
        if self._cursor is None or not self._cursor.count:
            return
        log.info("stdout: %d final(s) stored but not printed before the last stop come first", self._cursor.count)
        last = 0
        while batch := self._cursor.after(last, REPLAY_BATCH):
            for m in batch:
                if self._write(m.payload.decode()):
                    self._cursor.ack([m.seq])
            last = batch[-1].seq

    def handle(self, event: Event) -> None:
        written = self._write(dumps(event.as_dict()).decode())
        if written and self._cursor is not None and isinstance(event, TranscriptEvent) and event.seq is not None:
            self._cursor.ack([event.seq])  # printed: the spool need not keep it for stdout

    def _write(self, line: str) -> bool:
        with self._lock:
            if self.closed:
                return False
            try:
                self._out.write(line + "\n")
                self._out.flush()
            except BrokenPipeError:
                self.closed = True  # `voxnode run --stdout | head` closed the pipe; nothing more to say
                return False
        return True


class LogOutput(Output):
    """Human-readable lines on the log, for people watching a terminal without --stdout."""

    name = "log"

    def __init__(self, logger: logging.Logger | None = None):
        self._log = logger or log

    @classmethod
    def from_context(cls, ctx: OutputContext) -> LogOutput | None:
        return None if ctx.stdout else cls()

    def handle(self, event: Event) -> None:
        if isinstance(event, LevelReport):
            self._log.info(
                "[%s] level %5.1f dBFS  peak %5.1f dBFS  active %3.0f%%",
                event.stream,
                event.rms_dbfs,
                event.peak_dbfs,
                100 * event.active_fraction,
            )
        elif isinstance(event, WakeEvent):
            self._log.info(
                "[%s] wake word %s (%.2f)",
                event.stream,
                event.wake_word,
                event.probability,
                extra={"STREAM": event.stream},
            )
        else:
            # A final says how far above the room's noise it was heard: `voxnode run --levels` is the
            # microphone's placement check (README), and the journal keeps it beside each text.
            heard = ""
            if event.is_final and event.speech_snr_db is not None:
                heard = f"  (heard {event.speech_snr_db:+.0f} dB over the room's noise)"
            # STREAM= and UTTERANCE_ID= become journal fields under systemd.
            self._log.info(
                "[%s] %s%s: %s%s",
                event.stream,
                event.type,
                " (follow-up)" if event.follow_up else "",
                event.text,
                heard,
                extra={"STREAM": event.stream, "UTTERANCE_ID": event.id},
            )
