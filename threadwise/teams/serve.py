"""Serving the Teams bot: the Bot Framework endpoint `/api/messages`, `GET /healthz` and `GET /metrics` (Prometheus,
threadwise/metrics.py) on their own port.

uvicorn runs the SDK's FastAPI app on an event loop in a thread of its own, so Teams serves beside Slack
(Socket Mode or its HTTP server) and the sync scheduler in one process without touching their threads.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from fastapi import Response

from threadwise import metrics
from threadwise.chat.serving import Scheduler, drain
from threadwise.teams.app import MESSAGES_PATH, TeamsBot

log = logging.getLogger(__name__)

UNAUTHENTICATED_WARNING = (
    "WARNING: THREADWISE_TEAMS_ALLOW_UNAUTHENTICATED=1 — the Teams endpoint accepts requests WITHOUT checking "
    "who sent them. Use this only for local trials with Microsoft 365 Agents Playground; never expose this port."
)


class TeamsServer:
    """`start()` binds and serves (port 0 picks a free port: `.port`), `stop()` ends it."""

    def __init__(self, bot: TeamsBot, *, host: str = "0.0.0.0", port: int = 3978) -> None:
        self.bot = bot
        self.host = host
        size = metrics.index_size_of(bot.conversations.index)

        def scrape() -> Response:  # a plain function: FastAPI runs it off the event loop
            body, content_type = metrics.exposition(size, waiting=lambda: bot.workers.waiting)
            return Response(body, media_type=content_type)

        bot.web.get("/metrics")(scrape)
        self._socket = socket.create_server((host, port), reuse_port=False, backlog=128)
        self.port = int(self._socket.getsockname()[1])
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._failed: BaseException | None = None

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        return f"http://{host}:{self.port}{MESSAGES_PATH}"

    def start(self, timeout: float = 30.0) -> TeamsServer:
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(ready,), name="threadwise-teams-http", daemon=True
        )
        self._thread.start()
        if not ready.wait(timeout) or self._failed is not None:
            raise RuntimeError(f"the Teams endpoint did not start: {self._failed or 'timed out'}")
        return self

    def _run(self, ready: threading.Event) -> None:
        try:
            asyncio.run(self._serve(ready))
        except BaseException as err:  # reported to start(), which raises it
            self._failed = err
            ready.set()

    async def _serve(self, ready: threading.Event) -> None:
        await self.bot.app.initialize()
        self.bot.serving(asyncio.get_running_loop())
        config = uvicorn.Config(
            self.bot.web,
            log_level="warning",
            log_config=None,
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=10,
        )
        self._server = uvicorn.Server(config)

        async def announce() -> None:
            while not self._server.started and not self._server.should_exit:  # type: ignore[union-attr]
                await asyncio.sleep(0.01)
            ready.set()

        waiter = asyncio.create_task(announce())
        await self._server.serve(sockets=[self._socket])
        waiter.cancel()

    def stop(self, timeout: float = 15.0) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
        self._socket.close()

    def __enter__(self) -> TeamsServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextmanager
def serve_teams(bot: TeamsBot, *, host: str, port: int, drain_s: float) -> Iterator[TeamsServer]:
    """Serve `bot`'s endpoint while the block runs, then give the answers in progress `drain_s`; refuses to
    start (ValueError, saying what to set) with settings that cannot authenticate requests."""
    settings = bot.settings
    problem = settings.problem()
    if problem:
        raise ValueError(problem)
    server = TeamsServer(bot, host=host, port=port).start()
    if settings.allow_unauthenticated:
        print(UNAUTHENTICATED_WARNING, file=sys.stderr, flush=True)
    print(
        f"Threadwise serves Teams at http://{host}:{server.port}{MESSAGES_PATH}. Ctrl-C stops it.", flush=True
    )
    try:
        yield server
    finally:  # the answers in progress first (at most drain_s): they send through the server's loop
        drain(bot, seconds=drain_s)
        server.stop()


def run_until_stopped(scheduler: Scheduler | None) -> None:
    """Without Slack: run the sync scheduler (if any) until Ctrl-C or SIGTERM."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    if scheduler is not None:
        scheduler.start()
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        if scheduler is not None:
            scheduler.shutdown(wait=False)
