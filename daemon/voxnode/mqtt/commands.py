"""Remote commands as MQTT carries them, parsed and checked here; carried out by the daemon through
the command table (voxnode/command_table.py).

On {prefix}/{node}/cmd a command is one JSON object: {"cmd": NAME, ...arguments,
"id": optional correlation string}. On {prefix}/{node}/{stream}/mute/set the
payload is ON or OFF (the Home Assistant switch), the same as {"cmd": "mute"} /
{"cmd": "unmute"}; on {prefix}/{node}/{stream}/follow_up/set, ON or OFF turns the
follow-up window of a stream with a wake word on or off, the same as
{"cmd": "follow_up_on"} / {"cmd": "follow_up_off"}; on {prefix}/{node}/{stream}/playing, ON or
OFF says whether the node plays sound now (stream/playback.py), the same as {"cmd": "playing_on"}
/ {"cmd": "playing_off"}. Anything else gets a reply on
{prefix}/{node}/error that names the problem, and changes nothing.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from voxnode.command_table import ARGUMENTS as COMMANDS
from voxnode.command_table import Command

OPTIONAL = ("id",)
# A command is a flat object (depth 1). json.loads recurses per level and raises RecursionError (no
# reply, a traceback) at about 1000; anything nested beyond this is refused before parsing.
MAX_DEPTH = 8


class CommandError(ValueError):
    def __init__(self, code: str, message: str, command: str | None = None, cid: Any = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.command = command
        self.cid = cid


def check_size(payload: bytes, max_bytes: int) -> None:
    """Before a command is queued: an oversized one is refused at once, never held in memory."""
    if len(payload) > max_bytes:
        raise CommandError(
            "too_large", f"command is {len(payload)} bytes; the limit is {max_bytes} (mqtt.max_command_bytes)"
        )


def json_depth(text: str) -> int:
    """Deepest nesting of [ and { outside strings (a linear pre-check; the payload is size-checked)."""
    depth = deepest = 0
    in_string = escaped = False
    for c in text:
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth -= 1
    return deepest


def parse_command(payload: bytes, *, max_bytes: int, streams: list[str]) -> Command:
    check_size(payload, max_bytes)
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError:
        raise CommandError("malformed", "command is not UTF-8 text") from None
    depth = json_depth(text)
    if depth > MAX_DEPTH:
        raise CommandError(
            "malformed",
            f"command nests {depth} levels deep (the limit is {MAX_DEPTH}); "
            'a command is a flat JSON object like {"cmd": "health"}',
        )
    try:
        data = json.loads(text, object_pairs_hook=_unique_keys)
    except CommandError:
        raise
    except json.JSONDecodeError as e:
        raise CommandError("malformed", f"command is not JSON: {e.msg} at position {e.pos}") from None
    except RecursionError:  # json_depth should have caught it
        raise CommandError("malformed", "command is nested too deeply") from None
    except ValueError as e:
        # Python refuses int() of a string longer than sys.get_int_max_str_digits() (4300): json.loads
        # raised this out of the daemon's tick, a traceback and no reply, for a 5,000-digit number.
        if "integer string conversion" in str(e):
            limit = sys.get_int_max_str_digits()
            raise CommandError("malformed", f"command has a number of more than {limit} digits") from None
        raise CommandError("malformed", f"command is not JSON: {e}") from None
    if not isinstance(data, dict):
        raise CommandError("malformed", 'command must be a JSON object like {"cmd": "health"}')
    cid = data.get("id")
    if cid is not None and not (isinstance(cid, str) and _is_utf8(cid)):
        # A lone surrogate ("\\ud800") is valid JSON but no UTF-8: echoed in a reply, it cannot be sent.
        raise CommandError("bad_argument", '"id" must be a string of UTF-8 text', cid=None)
    name = data.get("cmd")
    if not isinstance(name, str):
        # {"cmd": ["mute"]} said `missing "cmd"`, though it is there.
        what = 'missing "cmd"' if name is None else '"cmd" must be a command\'s name'
        raise CommandError("malformed", f"{what} (one of: " + ", ".join(COMMANDS) + ")", cid=cid)
    if name not in COMMANDS:
        raise CommandError(
            "unknown_command", f"unknown command {name!r}; known: " + ", ".join(COMMANDS), command=name, cid=cid
        )
    allowed = set(COMMANDS[name]) | set(OPTIONAL) | {"cmd"}
    extra = sorted(set(data) - allowed)
    if extra:
        raise CommandError("bad_argument", f"{name}: unexpected key(s) " + ", ".join(extra), command=name, cid=cid)
    stream = None
    if "stream" in COMMANDS[name]:
        stream = data.get("stream")
        if not isinstance(stream, str):
            # {"stream": 5} said `"stream" is required`, though it is there.
            what = "is required" if stream is None else "must be a stream's name"
            raise CommandError(
                "bad_argument", f'{name}: "stream" {what} (one of: {", ".join(streams)})', command=name, cid=cid
            )
        if stream not in streams:
            raise CommandError(
                "unknown_stream", f"{name}: no stream {stream!r}; streams: {', '.join(streams)}", command=name, cid=cid
            )
    return Command(name=name, stream=stream, id=cid)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A key given twice is refused: json.loads kept the last, so {"cmd": "mute", "stream": "mic",
    "cmd": "unmute"} unmuted the stream without a word."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise CommandError("malformed", f"command has {key!r} more than once")
        out[key] = value
    return out


MUTE_PAYLOADS = {"ON": "mute", "OFF": "unmute"}
FOLLOW_UP_PAYLOADS = {"ON": "follow_up_on", "OFF": "follow_up_off"}
PLAYING_PAYLOADS = {"ON": "playing_on", "OFF": "playing_off"}


def parse_mute_set(topic: str, stream: str, payload: bytes, *, streams: list[str]) -> Command:
    """ON/OFF on {prefix}/{node}/{stream}/mute/set -> the mute or unmute command."""
    return parse_switch_set(topic, stream, payload, streams=streams, payloads=MUTE_PAYLOADS)


def parse_switch_set(
    topic: str, stream: str, payload: bytes, *, streams: list[str], payloads: dict[str, str]
) -> Command:
    """ON/OFF on a stream's switch topic -> the command `payloads` names for it."""
    text = payload.decode("utf-8", errors="replace").strip()
    name = payloads.get(text.upper()) if len(payload) <= 16 else None
    if name is None:
        command = payloads["ON"]
        raise CommandError("bad_argument", f"{topic}: payload must be ON or OFF, got {text[:40]!r}", command=command)
    if stream not in streams:
        raise CommandError(
            "unknown_stream", f"{topic}: no stream {stream!r}; streams: {', '.join(streams)}", command=name
        )
    return Command(name=name, stream=stream)


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def sendable(text: str | None) -> str | None:
    """Text a reply can carry: a lone surrogate from the command (\\ud800 in a JSON string) becomes
    its escape, instead of making the reply itself fail to encode."""
    if text is None or not isinstance(text, str):
        return None
    return text if _is_utf8(text) else text.encode("utf-8", "backslashreplace").decode("utf-8")


def error_reply(err: CommandError, payload: bytes, time_iso: str) -> dict:
    excerpt = payload[:200].decode("utf-8", errors="replace")
    return {
        "error": err.code,
        "message": sendable(err.message),
        "cmd": sendable(err.command),
        "id": sendable(err.cid),
        "received": excerpt,
        "time": time_iso,
    }
