"""uvicorn's HTTP/1.1 protocol for the Slack endpoint, with two things uvicorn lacks: a deadline for a request's
headers, and a connection limit that sheds slow clients instead of refusing Slack.

uvicorn's own `limit_concurrency` answers 503 to every new request once that many connections are open. Clients
that send half a request and wait are each held until the body deadline, so a few hundred of them kept Slack's
real requests out for as long as they kept coming. Here, when a new connection would pass the limit, the oldest
connection that is not being answered (still sending its headers or its body, or idle between requests) is
closed instead: 408 when it was sending, quietly when idle. Only when every connection holds a request being
answered is the newcomer refused (503). A real request arrives whole in a moment, so it is never the oldest.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger(__name__)

TIMED_OUT = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
BUSY = b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"


class _Shed:
    """Counts shed and refused connections, and logs them at most once every `every` seconds (a flood of
    half-sent requests must not flood the log too)."""

    def __init__(self, every: float = 10.0) -> None:
        self.every = every
        self.shed = self.refused = 0
        self._logged = float("-inf")

    def note(self, now: float, *, refused: bool) -> None:
        if refused:
            self.refused += 1
        else:
            self.shed += 1
        if now - self._logged >= self.every:
            self._logged = now
            log.warning(
                "connection limit reached: %d slow or idle connections closed, %d new ones refused so far",
                self.shed,
                self.refused,
            )


def limited_protocol(*, header_timeout: float, max_connections: int) -> type[H11Protocol]:
    """The protocol class for `uvicorn.Config(http=...)`; run it with `limit_concurrency=None`."""
    shed = _Shed()

    class Protocol(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None
        _since = 0.0

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._since = self.loop.time()
            self._arm()
            if len(self.connections) > max_connections:
                self._make_room()

        def _make_room(self) -> None:
            waiting = [c for c in self.connections if isinstance(c, Protocol) and c is not self and c._idle()]
            if waiting:
                min(waiting, key=lambda c: c._since)._close(TIMED_OUT)
                shed.note(self.loop.time(), refused=False)
            else:
                self._close(BUSY)
                shed.note(self.loop.time(), refused=True)

        def _idle(self) -> bool:
            """Not answering anything: headers or body still coming, or waiting for the next request."""
            if self.transport.is_closing():
                return False
            cycle = self.cycle
            return (
                cycle is None or cycle.response_complete or (cycle.more_body and not cycle.response_started)
            )

        def _close(self, reply: bytes) -> None:
            if self.transport.is_closing():
                return
            if self.cycle is None or not self.cycle.response_started:
                self.transport.write(reply)
            self.transport.close()  # an app still reading the body hears the client went away

        def _arm(self) -> None:
            self._disarm()
            self._header_timer = self.loop.call_later(header_timeout, self._too_slow)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.cycle is not None and not self.cycle.response_complete:
                self._disarm()  # the headers are in: the app's body deadline takes over

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _too_slow(self) -> None:
            if self.cycle is None or self.cycle.response_complete:
                self._close(TIMED_OUT)

    return Protocol
