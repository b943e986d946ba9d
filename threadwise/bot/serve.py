"""Running the Slack bot: Socket Mode (default, no public URL) or HTTP for the Events API behind a load balancer.

In HTTP mode events, interactivity and the slash command all arrive at `/slack/events` (Bolt checks each
request's signature and age; a bad or stale one gets 401). `GET /healthz` answers 200 for load balancers.
Bolt's own `app.start()` is a single-threaded development server, so this uses the standard library's
threading server instead; the slow work runs in the bot's pool either way.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from slack_bolt import BoltRequest, BoltResponse

from threadwise.bot.slack_app import SlackBot, SlackSettings

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
MAX_BODY = 1_000_000  # Slack's payloads are far smaller


class Scheduler(Protocol):
    def start(self) -> None: ...
    def shutdown(self, *, wait: bool = True) -> None: ...


def make_http_server(bot: SlackBot, *, host: str = "0.0.0.0", port: int = 3000) -> ThreadingHTTPServer:
    """A threading HTTP server that hands `POST /slack/events` to Bolt; port 0 picks a free port."""
    app = bot.app

    class Handler(BaseHTTPRequestHandler):
        server_version = "Threadwise"

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("%s " + format, self.address_string(), *args)

        def do_GET(self) -> None:
            if self.path.partition("?")[0] == "/healthz":
                self._send(BoltResponse(status=200, body="ok"))
            else:
                self._send(BoltResponse(status=404, body="not found"))

        def do_POST(self) -> None:
            path, _, query = self.path.partition("?")
            length = int(self.headers.get("Content-Length") or 0)
            if path != EVENTS_PATH:
                self._send(BoltResponse(status=404, body="not found"))
                return
            if length > MAX_BODY:
                self._send(BoltResponse(status=413, body="too large"))
                return
            body = self.rfile.read(length).decode("utf-8", "replace")
            headers: dict[str, str | Sequence[str]] = {k.lower(): v for k, v in self.headers.items()}
            try:
                request = BoltRequest(body=body, query=query, headers=headers)
            except ValueError:  # Bolt parses the body before it checks the signature
                log.info("refused a request whose body is not JSON or a form")
                self._send(BoltResponse(status=400, body="malformed body"))
                return
            try:
                response = app.dispatch(request)
            except Exception:  # a payload that trips Bolt itself: say so, keep serving
                log.exception("Bolt failed on a request")
                response = BoltResponse(status=500, body="internal error")
            self._send(response)

        def _send(self, response: BoltResponse) -> None:
            data = (response.body or "").encode("utf-8")
            self.send_response(response.status)
            for name, values in response.headers.items():
                if name.lower() != "content-length":
                    for value in values:
                        self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return _Server((host, port), Handler)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the standard library's 5 resets connections under a burst of events


def require_tokens(settings: SlackSettings, *, http_port: int | None) -> None:
    """Fail at once, before anything is built, when the tokens the chosen mode needs are missing."""
    if not settings.bot_token:
        raise ValueError("SLACK_BOT_TOKEN is not set (the Bot User OAuth Token, xoxb-…)")
    if http_port is None and not settings.app_token:
        raise ValueError(
            "SLACK_APP_TOKEN is not set: Socket Mode needs an app-level token (xapp-…) with connections:write; or use --http PORT"
        )
    if http_port is not None and not settings.signing_secret:
        raise ValueError(
            "SLACK_SIGNING_SECRET is not set: HTTP mode needs it to check that requests come from Slack"
        )


def serve(
    bot: SlackBot,
    *,
    http_port: int | None = None,
    host: str = "0.0.0.0",
    scheduler: Scheduler | None = None,
    warm_up: Callable[[], None] | None = None,
) -> None:
    """Run until Ctrl-C or SIGTERM: the sync scheduler, then Slack (Socket Mode, or HTTP on `http_port`)."""
    require_tokens(bot.settings, http_port=http_port)
    if warm_up is not None:
        warm_up()
    if scheduler is not None:
        scheduler.start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        if http_port is None:
            _socket_mode(bot, stop)
        else:
            _http(bot, host, http_port, stop)
    except KeyboardInterrupt:
        pass
    finally:
        log.info("shutting down: finishing the questions in progress")
        if scheduler is not None:
            scheduler.shutdown(wait=False)
        bot.close(wait=True)


def _socket_mode(bot: SlackBot, stop: threading.Event) -> None:
    from slack_bolt.adapter.socket_mode import SocketModeHandler

    handler = SocketModeHandler(bot.app, bot.settings.app_token)
    handler.connect()
    print("Threadwise is connected to Slack (Socket Mode). Ctrl-C stops it.", flush=True)
    try:
        stop.wait()
    finally:
        handler.close()


def _http(bot: SlackBot, host: str, port: int, stop: threading.Event) -> None:
    server = make_http_server(bot, host=host, port=port)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    thread.start()
    print(
        f"Threadwise listens on http://{host}:{server.server_address[1]}{EVENTS_PATH}. Ctrl-C stops it.",
        flush=True,
    )
    try:
        stop.wait()
    finally:
        server.shutdown()
        server.server_close()
