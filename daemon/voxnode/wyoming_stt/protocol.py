"""Reading Wyoming events with bounds, and the errors a client is told.

wyoming's own `async_read_event` reads whatever `data_length` and `payload_length` a peer
declares: a client announcing a 4 GB payload would make the server buffer it. This reader checks
each length against a bound before reading, and tells malformed input apart from a closed
connection, so each gets a clear answer (`error` event) instead of a silent close. JSON that
Python's parser refuses past its own limits (nesting deeper than the recursion limit, an integer of
more than 4,300 digits) is malformed input like any other, not a traceback.
"""

from __future__ import annotations

import asyncio
import json

from wyoming.error import Error
from wyoming.event import Event

MAX_HEADER_BYTES = 64 * 1024  # the JSON header line
MAX_DATA_BYTES = 64 * 1024  # the extra JSON data after the header
# One audio chunk: 10 s of 48 kHz stereo 32-bit (HA sends 16 kHz 16-bit mono chunks of ~20-100 ms).
MAX_PAYLOAD_BYTES = 4 * 1024 * 1024


class BadEvent(Exception):
    """The peer sent something that is not a Wyoming event within the bounds; the message says what."""


def error_event(code: str, text: str) -> Event:
    return Error(text=text, code=code).event()


async def read_event(reader: asyncio.StreamReader) -> Event | None:
    """The next event, or None when the peer closed the connection cleanly between events."""
    try:
        line = await reader.readuntil(b"\n")
    except asyncio.IncompleteReadError as e:
        if not e.partial:
            return None
        raise BadEvent("connection closed in the middle of an event header") from None
    except asyncio.LimitOverrunError:
        raise BadEvent(f"event header longer than {MAX_HEADER_BYTES} bytes") from None
    header = _json(line, "event header")
    if not isinstance(header, dict) or not isinstance(header.get("type"), str):
        raise BadEvent('event header is not a JSON object with a "type"')
    data = header.get("data") or {}
    if not isinstance(data, dict):
        raise BadEvent('event "data" is not a JSON object')
    data_length = _length(header, "data_length", MAX_DATA_BYTES)
    payload_length = _length(header, "payload_length", MAX_PAYLOAD_BYTES)
    try:
        if data_length:
            extra = _json(await reader.readexactly(data_length), "event data")
            if not isinstance(extra, dict):
                raise BadEvent('event "data" is not a JSON object')
            data.update(extra)
        payload = await reader.readexactly(payload_length) if payload_length else None
    except asyncio.IncompleteReadError:
        raise BadEvent("connection closed in the middle of an event") from None
    return Event(type=header["type"], data=data, payload=payload)


def _json(raw: bytes, what: str) -> object:
    try:
        return json.loads(raw)
    except RecursionError:
        raise BadEvent(f"{what} is JSON nested too deeply") from None
    except ValueError as e:  # JSONDecodeError, UnicodeDecodeError, an integer past 4,300 digits
        why = "an integer with too many digits" if "digits" in str(e) else "not JSON"
        raise BadEvent(f"{what} is {why}") from None


def _length(header: dict, key: str, bound: int) -> int:
    value = header.get(key) or 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadEvent(f"{key} {value!r} is not a byte count")
    if value > bound:
        raise BadEvent(f"{key} {value} is over the {bound}-byte bound")
    return value
