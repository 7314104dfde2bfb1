"""What one Wyoming client may hold of the server, and for how long (issue 27).

- Replies: a connection queues at most `MAX_QUEUED_REPLIES` events for its client; past that its
  input is not read until the client reads, and a client that reads nothing for `REPLY_STALL_S`
  is disconnected (logged). Measured before the bound (scripts/bench/wyoming_limits.py): 100,000
  `describe` events whose replies were never read took the daemon from 119 to 350 MB.
- Slots: `wyoming.max_clients` requests transcribe at once. A request takes its slot at its first
  audio chunk and gives it back when its transcript is sent, it fails or its client leaves; a
  connection that only describes, pings or idles holds none (8 pinging sockets used to lock every
  other client out). A request holding a slot must keep its audio coming (`SLOT_IDLE_S`) and reach
  audio-stop within `wyoming.max_audio_s` + `SLOT_GRACE_S` of its first chunk.
- Connections: at most `connection_cap(max_clients)` open; one more closes the connection that has
  gone longest without a request (it holds no slot), so idle sockets cannot keep a client out.
- Audio: only a request holding a slot buffers audio, at most `wyoming.max_audio_s` of it (16 kHz
  float32, 64 kB/s; its partial and final decode jobs hold a copy each): in total at most
  max_clients x max_audio_s x 3 copies = 8 x 30 s x 192 kB/s = 46 MB with the defaults.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

# 32 events: a client pipelining a few describes or a streaming request's transcript-chunks
# (a few per second) never waits; an Info event is ~1 kB, so the queue holds ~32 kB at most.
MAX_QUEUED_REPLIES = 32
REPLY_STALL_S = 10.0
# A satellite (and Home Assistant relaying it) sends a chunk every 20-100 ms while audio flows.
SLOT_IDLE_S = 10.0
SLOT_GRACE_S = 10.0
# Open connections: beyond the slots, room for describing and pinging clients; far under the
# default file limit (1024). 200 idle connections measured at +2 MB RSS (all accepted).
MIN_CONNECTIONS = 64
EVICTION_LOG_EVERY_S = 10.0


def connection_cap(max_clients: int) -> int:
    return max(MIN_CONNECTIONS, 2 * max_clients)


class Slots:
    """How many requests transcribe at once; used on the server's event loop only."""

    def __init__(self, size: int):
        self.size = size
        self.held = 0

    def take(self) -> bool:
        if self.held >= self.size:
            return False
        self.held += 1
        return True

    def give(self) -> None:
        self.held = max(0, self.held - 1)


class Lease:
    """One connection's hold on a slot: taken at its request's first audio chunk, given back when the
    request ends; while held, the audio must keep coming and end in time (`read_timeout`)."""

    def __init__(self, slots: Slots, max_audio_s: float):
        self.slots = slots
        self._max_audio_s = max_audio_s
        self.held = False
        self._since = 0.0
        self.idle_since = time.monotonic()  # connected, or its last request ended (Roster)

    def take(self) -> bool:
        """True if held (already or now); False: every slot is taken."""
        if not self.held and self.slots.take():
            self.held = True
            self._since = time.monotonic()
        return self.held

    def give(self) -> None:
        if self.held:
            self.slots.give()
            self.held = False
        self.idle_since = time.monotonic()

    def read_timeout(self, idle_timeout_s: float) -> tuple[float, str]:
        """How long to wait for the client's next event, and what to tell it when nothing came."""
        idle = idle_timeout_s, f"nothing received for {idle_timeout_s:g} s (wyoming.idle_timeout_s)"
        if not self.held:
            return idle
        limit = self._max_audio_s + SLOT_GRACE_S
        left = self._since + limit - time.monotonic()
        if left <= min(SLOT_IDLE_S, idle_timeout_s):
            why = f"the request's audio did not end within {limit:g} s of its first chunk (wyoming.max_audio_s + 10 s)"
            return max(0.0, left), why
        if idle_timeout_s > SLOT_IDLE_S:
            return SLOT_IDLE_S, f"no audio for {SLOT_IDLE_S:g} s in the middle of a request"
        return idle


class Evictable(Protocol):
    key: str
    lease: Lease

    def evict(self, why: str) -> None: ...


class Roster:
    """The open connections; a newcomer past the cap evicts the one longest without a request."""

    def __init__(self, cap: int, log: Callable[[str], None]):
        self.cap = cap
        self._open: dict[str, Evictable] = {}
        self._log = log
        self.evicted = 0
        self._evicted_unlogged = 0
        self._last_log = float("-inf")

    def __len__(self) -> int:
        return len(self._open)

    def add(self, conn: Evictable) -> None:
        while len(self._open) >= self.cap:
            idle = [c for c in self._open.values() if not c.lease.held]
            if not idle:
                break  # every one holds a slot: cannot happen while cap > max_clients
            victim = min(idle, key=lambda c: c.lease.idle_since)
            self._open.pop(victim.key)
            victim.evict(f"{self.cap} connections open and this one has no request; closed for a new client")
            self._count_eviction(victim.key, time.monotonic() - victim.lease.idle_since)
        self._open[conn.key] = conn

    def remove(self, conn: Evictable) -> None:
        self._open.pop(conn.key, None)

    def _count_eviction(self, key: str, idle_s: float) -> None:
        self.evicted += 1
        self._evicted_unlogged += 1
        now = time.monotonic()
        if now - self._last_log >= EVICTION_LOG_EVERY_S:
            self._log(
                f"{self._evicted_unlogged} connection(s) without a request closed to make room "
                f"(last: {key}, {idle_s:.0f} s without a request; at most {self.cap} connections)"
            )
            self._evicted_unlogged = 0
            self._last_log = now
