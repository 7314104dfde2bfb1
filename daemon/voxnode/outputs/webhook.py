"""The "webhook" output: each final POSTed as JSON to `[webhook] url`, retried from the spool until
the endpoint accepts it (any 2xx).

Durable: the finals come from this output's spool cursor (voxnode.delivery), in seq order; one is
acknowledged there only once the endpoint accepted it, so a final the endpoint did not take is sent
again, after a backoff (`retry_min_s` doubling to `retry_max_s`), and after a restart, with the same
body. Later finals wait behind it, so the endpoint sees them in order. A receiver drops one it has
already taken by its `seq` (also in the `X-Voxnode-Seq` header). A final the spool could not store
(`"seq": null`) is sent from memory, within FROM_MEMORY. Partials, wake words and levels are not sent.

One thread (`webhook`) does the sending; `handle` only wakes it.
"""

from __future__ import annotations

import http.client
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from voxnode import __version__
from voxnode.config.fields import InvalidValue, setting
from voxnode.config.wording import toml_value
from voxnode.delivery.retry import HeldFinal
from voxnode.events import Event, TranscriptEvent, dumps
from voxnode.outputs.base import Output, OutputContext
from voxnode.threads import NamedThread

if TYPE_CHECKING:
    from voxnode.delivery.cursor import SpoolCursor

log = logging.getLogger(__name__)

FROM_MEMORY = 1000  # finals without a durable copy held for the endpoint, at most
BATCH = 50  # spooled finals read at a time
UNSTORED = 0  # the held "seq" of a final from memory (real seqs start at 1)
STOP_MIN_S = 1.0  # at least this long for the POST in flight when the daemon stops


@dataclass(frozen=True)
class WebhookConfig:
    url: str = setting("", 'Endpoint that each final is POSTed to as JSON (http:// or https://); "" = off.')
    timeout_s: float = setting(10.0, "A POST not answered within this long failed, and is retried.", min=0.5, max=300.0)
    headers: tuple[str, ...] = setting(
        (), 'Extra request headers, each "Name: value" (e.g. "Authorization: Bearer ...").', secret=True
    )
    retry_min_s: float = setting(
        1.0, "First retry delay after a failed POST; it doubles on each failure up to retry_max_s.", min=0.1, max=600.0
    )
    retry_max_s: float = setting(60.0, "Longest retry delay. Retrying never stops.", min=1.0, max=3600.0)

    def check(self) -> None:
        if self.url:
            try:  # the port is read here, as the output reads it: "h:99999", "h:abc" and "[::1" raised there
                parts = urlsplit(self.url)
                port = parts.port
            except ValueError as e:
                raise InvalidValue("url", f"is not a valid URL ({e}); e.g. http://ha.local:8123/hook") from None
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise InvalidValue(
                    "url", "must be an http:// or https:// URL with a host, e.g. http://ha.local:8123/hook"
                )
            if port == 0:  # nothing listens there: every POST failed and was retried for ever
                raise InvalidValue("url", "port 0 is no port; leave it out for 80/443 or give the endpoint's")
        for i, h in enumerate(self.headers):
            name, sep, value = h.partition(":")
            if not sep or not name.strip() or any(c in h for c in "\r\n") or " " in name.strip():
                # Its name alone, cut short: the value may be a token (Authorization: Bearer ...).
                shown = toml_value(name.strip()[:40])
                raise InvalidValue(f"headers[{i}]", f'must be "Name: value" on one line; {shown} is not')
        if self.retry_max_s < self.retry_min_s:
            raise InvalidValue("retry_max_s", f"must not be smaller than retry_min_s ({self.retry_min_s})")


class WebhookOutput(Output):
    name = "webhook"
    durable = True

    def __init__(self, config: WebhookConfig):
        self.config = config
        parts = urlsplit(config.url)
        self._https = parts.scheme == "https"
        self._host, self._port = parts.hostname or "", parts.port
        self._path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.shown_url = f"{parts.scheme}://{parts.hostname}{f':{parts.port}' if parts.port else ''}{parts.path}"
        self._headers = {"Content-Type": "application/json", "User-Agent": f"voxnode/{__version__}"}
        for h in config.headers:
            name, _, value = h.partition(":")
            self._headers[name.strip()] = value.strip()
        self._cursor: SpoolCursor | None = None
        self._memory: deque[bytes] = deque()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._held = HeldFinal(config.retry_min_s, config.retry_max_s)
        self._thread = NamedThread(target=self._run, name="webhook", daemon=True)
        self.delivered = 0
        self.failures = 0  # POSTs that failed (each retry counts)
        self.lost = 0  # finals without a durable copy dropped because FROM_MEMORY were waiting
        self.last_error = ""

    @classmethod
    def from_context(cls, ctx: OutputContext) -> WebhookOutput | None:
        return cls(ctx.config.webhook) if ctx.config.webhook.url else None

    def attach(self, cursor: SpoolCursor) -> None:
        self._cursor = cursor

    def start(self) -> None:
        waiting = self._cursor.count if self._cursor is not None else 0
        log.info("webhook: POSTing finals to %s; %d waiting in the spool", self.shown_url, waiting)
        self._thread.start()

    def stop(self, deadline: float) -> None:
        """The POST in flight finishes (bounded by timeout_s); what is not accepted stays in the spool."""
        self._stopping.set()
        self._wake.set()
        self._thread.join(max(STOP_MIN_S, deadline - time.monotonic()))

    def handle(self, event: Event) -> None:
        if not (isinstance(event, TranscriptEvent) and event.is_final):
            return
        if event.seq is None or self._cursor is None:
            if len(self._memory) >= FROM_MEMORY:
                self.lost += 1
                log.error(
                    "webhook: %d finals without a durable copy already wait; final %s is dropped", FROM_MEMORY, event.id
                )
                return
            self._memory.append(dumps(event.as_dict()))
        self._wake.set()

    def health(self) -> Callable[[], dict]:
        return self.stats

    def stats(self) -> dict:
        retry = self._held.retry_in_s()
        return {
            "url": self.shown_url,
            "backlog": (self._cursor.count if self._cursor is not None else 0) + len(self._memory),
            "delivered": self.delivered,
            "failures": self.failures,
            "lost": self.lost,
            "held_seq": self._held.seq,
            "retry_in_s": round(retry, 1) if retry is not None else None,
            "last_error": self.last_error,
        }

    # ---- the sending thread ------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stopping.is_set():
            retry = self._held.retry_in_s()
            if retry and self._stopping.wait(retry):  # a backoff: new finals wait, only a stop cuts it short
                return
            self._wake.clear()
            if not self._send_pending():
                self._wake.wait(0.5 if self._memory or (self._cursor and self._cursor.count) else None)

    def _send_pending(self) -> bool:
        """Send what waits, oldest first; False when nothing was sent (a failure, or nothing to send)."""
        sent = False
        while self._cursor is not None and not self._stopping.is_set():
            batch = self._cursor.after(0, BATCH)
            if not batch:
                break
            for m in batch:
                if not self._post(m.payload, m.seq):
                    return False
                self._cursor.ack([m.seq])
                sent = True
        while self._memory and not self._stopping.is_set():
            if not self._post(self._memory[0], UNSTORED):
                return False
            self._memory.popleft()
            sent = True
        return sent

    def _post(self, body: bytes, seq: int) -> bool:
        if not self._held.due():
            return False
        headers = {**self._headers, "X-Voxnode-Seq": str(seq) if seq != UNSTORED else "null"}
        kind = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        conn = kind(self._host, self._port, timeout=self.config.timeout_s)
        try:
            conn.request("POST", self._path, body=body, headers=headers)
            response = conn.getresponse()
            reply = response.read(200)
            status = response.status
        except (OSError, http.client.HTTPException) as e:
            return self._failed(seq, f"cannot POST to {self.shown_url}: {e or type(e).__name__}")
        finally:
            conn.close()
        if not 200 <= status < 300:
            excerpt = reply.decode("utf-8", "replace").strip()
            return self._failed(seq, f"{self.shown_url} answered {status} {excerpt[:80]!r}".rstrip())
        self.delivered += 1
        refusals = self._held.accepted(seq)
        if refusals:
            log.warning("webhook: %s accepted final seq %s after %d failure(s)", self.shown_url, seq, refusals)
            self.last_error = ""
        return True

    def _failed(self, seq: int, why: str) -> bool:
        self.failures += 1
        delay = self._held.refused(seq)
        message = f"webhook: {why}; final seq {seq} and those after it are retried (next in {delay or 0:.1f} s)"
        if why != self.last_error:
            log.error("%s", message)
        else:
            log.debug("%s", message)
        self.last_error = why
        return False
