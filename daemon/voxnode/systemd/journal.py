"""journald logging with structured fields.

Any `extra={...}` key that is a valid journal field name (STREAM, DEVICE,
UTTERANCE_ID, ...) becomes a journal field, so `journalctl -u voxnode STREAM=kitchen`
works. Used only when journald is really there: JournalHandler drops messages
silently when its socket is missing, which would lose every log line.

systemd-python is imported only when a handler is built, so commands that log to
stderr (`voxnode transcribe`, `check-config`, `devices`) run without it.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path

JOURNAL_SOCKET = Path("/run/systemd/journal/socket")
_FIELD_NAME = re.compile(r"[A-Z0-9][A-Z0-9_]{0,63}\Z")  # journald's rule; leading "_" is reserved
_RECORD_ATTRS = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


def journald_wanted(environ: Mapping[str, str] = os.environ, stderr_fd: int = 2) -> bool:
    """True when systemd started us and journald is listening.

    JOURNAL_STREAM names the (device, inode) of the stream systemd connected stderr
    to; if stderr still is that stream, journald gets our output anyway, so send it
    structured. INVOCATION_ID alone covers units whose stderr goes elsewhere.
    """
    if not JOURNAL_SOCKET.exists():
        return False
    stream = environ.get("JOURNAL_STREAM", "")
    if stream:
        try:
            dev, ino = (int(x) for x in stream.split(":"))
            st = os.fstat(stderr_fd)
            if (st.st_dev, st.st_ino) == (dev, ino):
                return True
        except (ValueError, OSError):
            pass
    return bool(environ.get("INVOCATION_ID"))


class StructuredJournalHandler(logging.Handler):
    """Like systemd's JournalHandler, but forwards only journal-worthy `extra` keys.

    The stock handler sends every LogRecord attribute (msg, args, levelname, ...);
    journald discards the lower-case ones, but they still cost a send each time.
    """

    def __init__(self, identifier: str = "voxnode"):
        super().__init__()
        from systemd import journal

        self.send = journal.send
        self.map_priority = journal.JournalHandler.map_priority
        self._extra = {"SYSLOG_IDENTIFIER": identifier}

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = self.format(record)
            fields = dict(self._extra)
            for key, value in record.__dict__.items():
                if key not in _RECORD_ATTRS and value is not None and _FIELD_NAME.match(key):
                    fields[key] = value
            if record.exc_info:
                fields["EXCEPTION_TEXT"] = logging.Formatter().formatException(record.exc_info)
            self.send(
                message,
                PRIORITY=str(self.map_priority(record.levelno)),
                LOGGER=record.name,
                THREAD_NAME=record.threadName,
                CODE_FILE=record.pathname,
                CODE_LINE=record.lineno,
                CODE_FUNC=record.funcName,
                **fields,
            )
        except Exception:
            self.handleError(record)


def journal_handler() -> logging.Handler:
    handler = StructuredJournalHandler()
    # journald stamps time, level and unit itself; the message alone reads best in journalctl.
    handler.setFormatter(logging.Formatter("%(message)s"))
    return handler
