"""Serving the Teams bot: the Bot Framework endpoint `/api/messages` and `GET /healthz` on their own port.

uvicorn runs the SDK's FastAPI app on an event loop in a thread of its own, so Teams serves beside Slack
(Socket Mode or its HTTP server) and the sync scheduler in one process without touching their threads.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading

import uvicorn

from threadwise.bot.teams_app import MESSAGES_PATH, TeamsBot

log = logging.getLogger(__name__)


class TeamsServer:
    """`start()` binds and serves (port 0 picks a free port: `.port`), `stop()` ends it."""

    def __init__(self, bot: TeamsBot, *, host: str = "0.0.0.0", port: int = 3978) -> None:
        self.bot = bot
        self.host = host
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
        self.bot.loop = asyncio.get_running_loop()
        await self.bot.app.initialize()
        config = uvicorn.Config(
            self.bot.web, log_level="warning", access_log=False, lifespan="off", timeout_graceful_shutdown=10
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
