"""Running the Slack bot: Socket Mode (default, no public URL) or HTTP for the Events API behind a load balancer.

In HTTP mode events, interactivity and the slash command all arrive at `/slack/events`, served by uvicorn
(`http_server`: limits, timeouts, the signature checked before anything is parsed). The server starts first,
so a load balancer's `GET /healthz` gets "starting" (503) while the models and the index load, then "ok".
Questions that arrive meanwhile are acknowledged and get their placeholder; they are answered once warm.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable

from threadwise.chat.serving import Scheduler, drain
from threadwise.slack.app import SlackBot
from threadwise.slack.http_server import EVENTS_PATH, HttpLimits, HttpServer
from threadwise.slack.settings import SlackSettings

log = logging.getLogger(__name__)

__all__ = ["EVENTS_PATH", "HttpServer", "serve"]


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
    limits: HttpLimits | None = None,
    drain_s: float,
) -> None:
    """Run until Ctrl-C or SIGTERM: the sync scheduler, then Slack (Socket Mode, or HTTP on `http_port`); on
    the way out the answers in progress get `drain_s`."""
    require_tokens(bot.settings, http_port=http_port)
    bot.ready.clear()  # answers wait until the models and the index are loaded
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    server = None
    try:
        if http_port is not None:
            server = HttpServer(bot, host=host, port=http_port, limits=limits, ready=bot.ready)
            server.start()
            print(f"Threadwise listens on http://{host}:{server.port}{EVENTS_PATH} (warming up).", flush=True)
        _warm_up(bot, warm_up)
        if scheduler is not None:
            scheduler.start()
        if server is None:
            _socket_mode(bot, stop)
        else:
            print("Threadwise is ready. Ctrl-C stops it.", flush=True)
            stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        log.info("shutting down: finishing the questions in progress")
        if server is not None:
            server.stop()
        if scheduler is not None:
            scheduler.shutdown(wait=False)
        drain(bot, seconds=drain_s)


def _warm_up(bot: SlackBot, warm_up: Callable[[], None] | None) -> None:
    """Learn the installed workspace (one quick auth.test, so a Slack Connect question that comes during the
    warm-up is already judged against it), load models and open the index; then let the workers answer."""
    try:
        bot.learn_installation()
        if warm_up is not None:
            warm_up()
    finally:
        bot.ready.set()


def _socket_mode(bot: SlackBot, stop: threading.Event) -> None:
    from threadwise.slack.socket_mode import socket_mode_handler

    handler = socket_mode_handler(bot)
    handler.connect()
    print("Threadwise is connected to Slack (Socket Mode). Ctrl-C stops it.", flush=True)
    try:
        stop.wait()
    finally:
        handler.close()
