"""The bot's HTTP endpoint for the Events API: a small ASGI app under uvicorn.

Every request is held to limits before Bolt sees it, in this order: headers within `header_timeout`
(a half-sent request is answered 408 and closed, never kept open), a body of at most `max_body` bytes (413)
read within `body_timeout` (408, and the connection closed), the Slack signature and its age checked on the raw bytes (401 when missing,
wrong or older than 5 minutes), only then the body parsed (400 when it is not a JSON object or a form with
a JSON-object payload). A signed interaction or slash command is handled once: its signature is claimed in
the database, so a replayed request is acknowledged and dropped. Bolt's dispatch runs in a thread pool;
anything it raises is answered 500 and logged in one line, never as a traceback to the client. Past
`max_connections` the oldest connection still sending (or idle) is closed to make room (`http_connections`),
so clients that send half a request and wait cannot keep Slack out.
`GET /healthz` says "starting" (503) until the models and the index are loaded, then "ok" (200);
`GET /metrics` gives Prometheus' text format (threadwise/metrics.py).
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

import uvicorn
from slack_bolt import BoltRequest, BoltResponse
from slack_sdk.signature import SignatureVerifier

from threadwise import metrics
from threadwise.slack.app import SlackBot
from threadwise.slack.handover import keep_received
from threadwise.slack.http_connections import limited_protocol
from threadwise.slack.question import PLATFORM

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


@dataclass(frozen=True)
class HttpLimits:
    max_body: int = 1_000_000  # Slack's payloads are far smaller
    header_timeout: float = 10.0
    body_timeout: float = 10.0
    max_connections: int = 256  # past it the oldest slow or idle connection is closed (503 when none is)
    dispatch_threads: int = 16


class _Refused(Exception):
    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status = status
        self.text = text


class SlackAsgiApp:
    """`/slack/events` and `/healthz` as an ASGI application."""

    def __init__(self, *, bot: SlackBot, limits: HttpLimits, ready: threading.Event) -> None:
        self.bot = bot
        self.limits = limits
        self.ready = ready
        self.verifier = SignatureVerifier(bot.settings.signing_secret)
        self._dispatch = ThreadPoolExecutor(limits.dispatch_threads, thread_name_prefix="threadwise-http")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        try:
            status, text, headers = await self._handle(scope, receive)
        except _Refused as refused:  # a body not read to its end: the connection cannot serve another request
            status, text = refused.status, refused.text
            headers = {"connection": "close"} if status in (408, 413) else {}
        except Exception as err:  # our own mistake: say so without a traceback to anyone
            log.error("HTTP request failed: %s", type(err).__name__)
            status, text, headers = 500, "internal error", {}
        await _respond(send, status, text, headers)

    async def _handle(self, scope: Scope, receive: Receive) -> tuple[int, str, dict[str, Any]]:
        path, method = scope.get("path", ""), scope.get("method", "")
        if path == "/healthz" and method in ("GET", "HEAD"):
            return (200, "ok", {}) if self.ready.is_set() else (503, "starting", {})
        if path == "/metrics" and method == "GET":
            loop = asyncio.get_running_loop()  # the index's size is read from the database: not on the loop
            exposition, content_type = await loop.run_in_executor(self._dispatch, self._metrics)
            return 200, exposition.decode("utf-8"), {"content-type": content_type}
        if path != EVENTS_PATH:
            return 404, "not found", {}
        if method != "POST":
            return 405, "method not allowed", {}
        headers = _headers(scope)
        declared = headers.get("content-length", "0")
        if not declared.isdigit():
            raise _Refused(400, "bad content-length")
        if int(declared) > self.limits.max_body:
            raise _Refused(413, "too large")
        raw = await self._body(receive)
        timestamp, signature = (
            headers.get("x-slack-request-timestamp", ""),
            headers.get("x-slack-signature", ""),
        )
        if not (timestamp and signature and self.verifier.is_valid(raw, timestamp, signature)):
            raise _Refused(401, "invalid request")
        try:
            body = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise _Refused(400, "malformed body") from None
        if not _well_formed(body, headers.get("content-type", "")):
            log.info("refused a signed request whose body is not a JSON object or a Slack form")
            raise _Refused(400, "malformed body")
        # Interactions and slash commands carry no event id: their signature is what a replay repeats.
        once = signature if "application/x-www-form-urlencoded" in headers.get("content-type", "") else None
        try:
            request = BoltRequest(
                body=body,
                query=scope.get("query_string", b"").decode("latin-1"),
                headers=_bolt_headers(headers),
            )
        except Exception:  # Bolt reads ids out of the payload as it builds the request: odd shapes trip it
            log.info("refused a signed request whose payload Bolt cannot read")
            raise _Refused(400, "malformed body") from None
        loop = asyncio.get_running_loop()
        response: BoltResponse = await loop.run_in_executor(
            self._dispatch, self._dispatch_safely, request, once
        )
        return response.status, response.body or "", dict(response.headers)

    def _metrics(self) -> tuple[bytes, str]:
        size = metrics.index_size_of(self.bot.conversations.index)
        return metrics.exposition(size, waiting=lambda: self.bot.workers.waiting)

    def _dispatch_safely(self, request: BoltRequest, once: str | None) -> BoltResponse:
        try:
            if once is not None and not self.bot.claim(f"signature:{once}"):
                log.info("dropped a replayed interaction or slash command")
                return BoltResponse(status=200, body="")
            if once is None and self.bot.conversations.claims is not None:  # an event: kept until handled
                keep_received(self.bot.conversations.claims, PLATFORM, request)
            return self.bot.app.dispatch(request)
        except Exception as err:  # a payload that trips Bolt itself: say so in one line, keep serving
            log.error("Bolt failed on a request: %s", type(err).__name__)
            return BoltResponse(status=500, body="internal error")

    async def _body(self, receive: Receive) -> bytes:
        chunks = bytearray()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.limits.body_timeout
        while True:
            try:
                message = await asyncio.wait_for(receive(), timeout=max(0.0, deadline - loop.time()))
            except TimeoutError:
                raise _Refused(408, "body too slow") from None
            if message.get("type") != "http.request":
                raise _Refused(400, "client went away")
            chunks.extend(message.get("body", b""))
            if len(chunks) > self.limits.max_body:
                raise _Refused(413, "too large")
            if not message.get("more_body", False):
                return bytes(chunks)

    def close(self) -> None:
        self._dispatch.shutdown(wait=True)


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}


def _bolt_headers(headers: dict[str, str]) -> dict[str, str | Sequence[str]]:
    return dict(headers.items())


def _well_formed(body: str, content_type: str) -> bool:
    """A JSON object (events), or a form whose `payload`, if any, is a JSON object (interactions)."""
    if "application/json" in content_type:
        try:
            parsed = json.loads(body)
        except ValueError:
            return False
        return isinstance(parsed, dict) and _shape_ok(parsed)
    if "application/x-www-form-urlencoded" in content_type:
        try:
            form = parse_qs(body, strict_parsing=bool(body), max_num_fields=200)
        except ValueError:
            return False
        if "payload" not in form:
            return bool(form.get("command") or form.get("ssl_check"))
        try:
            payload = json.loads(form["payload"][0])
        except ValueError:
            return False
        return isinstance(payload, dict) and isinstance(payload.get("type"), str) and _shape_ok(payload)
    return False


_OBJECTS = ("team", "user", "channel", "container", "message", "view", "enterprise")


def _shape_ok(body: dict[str, Any]) -> bool:
    """The parts Bolt reads before any listener runs have the shape Slack gives them (a signed request can
    still carry `"event": null` or `"actions": []`, which trip Bolt itself). Slack sends null for what an
    ordinary workspace lacks (`"enterprise": null`; `"team": null` in an org-wide install's payloads), and Bolt
    reads those as absent; a number or a string where Slack puts an object is refused."""
    kind = body.get("type")
    if kind == "event_callback":
        event = body.get("event")
        if not (isinstance(event, dict) and isinstance(event.get("type"), str)):
            return False
    if kind in ("block_actions", "interactive_message"):
        actions = body.get("actions")
        if not (isinstance(actions, list) and actions and all(isinstance(a, dict) for a in actions)):
            return False
    if kind in ("view_submission", "view_closed") and not isinstance(body.get("view"), dict):
        return False
    authorizations = body.get("authorizations")
    if authorizations is not None and not (
        isinstance(authorizations, list) and all(isinstance(a, dict) for a in authorizations)
    ):
        return False
    return all(body[k] is None or isinstance(body[k], dict) for k in _OBJECTS if k in body)


async def _respond(send: Send, status: int, text: str, headers: dict[str, Any]) -> None:
    data = text.encode("utf-8")
    out = [(b"content-length", str(len(data)).encode())]
    if not any(k.lower() == "content-type" for k in headers):
        out.append((b"content-type", b"text/plain; charset=utf-8"))
    for name, values in headers.items():
        if name.lower() == "content-length":
            continue
        for value in values if isinstance(values, list | tuple) else [values]:
            out.append((name.lower().encode("latin-1"), str(value).encode("latin-1")))
    await send({"type": "http.response.start", "status": status, "headers": out})
    await send({"type": "http.response.body", "body": data})


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


class HttpServer:
    """uvicorn serving `SlackAsgiApp` in a thread: `start()`, `stop()`, `port` (0 picks a free port)."""

    def __init__(
        self,
        bot: SlackBot,
        *,
        host: str = "0.0.0.0",
        port: int = 3000,
        limits: HttpLimits | None = None,
        ready: threading.Event | None = None,
    ) -> None:
        self.limits = limits or HttpLimits()
        self.ready = ready or _set_event()
        self.app = SlackAsgiApp(bot=bot, limits=self.limits, ready=self.ready)
        self._socket = socket.create_server((host, port), reuse_port=False, backlog=512)
        self.host = host
        self.port = int(self._socket.getsockname()[1])
        config = uvicorn.Config(
            self.app,
            http=limited_protocol(
                header_timeout=self.limits.header_timeout, max_connections=self.limits.max_connections
            ),
            lifespan="off",
            log_level="warning",
            log_config=None,  # uvicorn's lines go to our handler: text or JSON, redacted
            access_log=False,
            timeout_keep_alive=5,
            limit_concurrency=None,  # the protocol keeps the limit, shedding slow clients first
            h11_max_incomplete_event_size=16 * 1024,  # request line and headers
            server_header=False,
        )
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        return f"http://{host}:{self.port}{EVENTS_PATH}"

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, name="threadwise-http", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._socket.close()
        self.app.close()


def _set_event() -> threading.Event:
    event = threading.Event()
    event.set()
    return event
