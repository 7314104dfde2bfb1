"""Events as JSON lines on stdout (`--stdout`), or as readable lines on the log."""

from __future__ import annotations

import json
import sys
import threading
from typing import TextIO


class JsonLinesSink:
    """One JSON object per line; a line is written whole even with many stream threads."""

    def __init__(self, out: TextIO | None = None):
        self._out = out or sys.stdout
        self._lock = threading.Lock()

    def emit(self, event: dict) -> None:
        line = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
        with self._lock:
            try:
                self._out.write(line + "\n")
                self._out.flush()
            except BrokenPipeError:
                pass  # `voxnode run --stdout | head` closed the pipe; nothing more to say


class LogSink:
    """Human-readable lines on the log, for people watching a terminal without --stdout."""

    def __init__(self, logger):
        self._log = logger

    def emit(self, event: dict) -> None:
        kind = event.get("type")
        if kind == "level":
            self._log.info(
                "[%s] level %5.1f dBFS  peak %5.1f dBFS  active %3.0f%%",
                event["stream"],
                event["rms_dbfs"],
                event["peak_dbfs"],
                100 * event["active"],
            )
        elif kind == "wake":
            self._log.info(
                "[%s] wake word %s (%.2f)",
                event["stream"],
                event["wake_word"],
                event["probability"],
                extra={"STREAM": event["stream"]},
            )
        elif kind in ("final", "partial"):
            # STREAM= and UTTERANCE_ID= become journal fields under systemd.
            self._log.info(
                "[%s] %s%s: %s",
                event["stream"],
                kind,
                " (follow-up)" if event.get("follow_up") else "",
                event["text"],
                extra={"STREAM": event["stream"], "UTTERANCE_ID": event.get("id", "")},
            )
