"""The Teams bot for tests and the Teams benchmark: the real TeamsBot (Teams SDK App) over a World (see
slack_world), served by uvicorn on 127.0.0.1 (a free port), answering through a FakeBotConnector.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from http.server import ThreadingHTTPServer
from typing import Any

import httpx
import jwt

from tests.support.fake_bot_connector import FakeBotConnector
from tests.support.slack_world import World
from tests.support.teams_activities import ADMIN, BOT_ID, TeamsSender
from threadwise.reports.service import GapReports
from threadwise.teams.app import TeamsBot
from threadwise.teams.serve import TeamsServer
from threadwise.teams.settings import TeamsSettings

APP_ID = BOT_ID.removeprefix("28:")
# what the local token provider hands the SDK for its calls to the connector (the SDK reads it as a JWT)
OUTGOING_TOKEN = jwt.encode(
    {"aud": "https://api.botframework.com", "appid": APP_ID, "exp": 4_102_444_800}, "local", algorithm="HS256"
)


@dataclass
class RunningTeams:
    bot: TeamsBot
    server: TeamsServer
    connector: FakeBotConnector
    send: TeamsSender


@contextmanager
def running_teams(
    world: World,
    connector: FakeBotConnector,
    *,
    authenticated: bool = False,
    gap_reports: GapReports | None = None,
    **settings: Any,
) -> Iterator[RunningTeams]:
    """The Teams bot for `world`. Unauthenticated (as with Agents Playground) unless `authenticated`: then
    TEAMS_CLIENT_ID is set, incoming tokens are checked against the connector's keys, and outgoing calls
    carry a token from a local provider (the SDK's `token` option) instead of one from Entra."""
    base = TeamsSettings(admin_ids=(ADMIN["aadObjectId"],), allow_unauthenticated=not authenticated)
    if authenticated:
        base = replace(base, client_id=APP_ID, client_secret="")
    with serving_teams(
        world,
        settings=replace(base, **settings),
        cloud=connector.cloud() if authenticated else None,
        token=(lambda scope, tenant=None: OUTGOING_TOKEN) if authenticated else None,
        gap_reports=gap_reports,
    ) as (bot, server):
        yield RunningTeams(bot, server, connector, TeamsSender(url=server.url, service_url=connector.url))


@contextmanager
def serving_teams(
    world: World,
    *,
    settings: TeamsSettings | None = None,
    cloud: Any = None,
    token: Any = None,
    gap_reports: GapReports | None = None,
) -> Iterator[tuple[TeamsBot, TeamsServer]]:
    """The Teams bot for `world` served on 127.0.0.1 (unauthenticated unless `settings` say otherwise); it
    answers through whatever connector each activity's serviceUrl names (ours, or the shared fake)."""
    settings = settings or TeamsSettings(admin_ids=(ADMIN["aadObjectId"],), allow_unauthenticated=True)
    bot = TeamsBot(
        conversations=world.conversations,
        admin=world.admin,
        settings=settings,
        cloud=cloud,
        token=token,
        gap_reports=gap_reports,
    )
    server = TeamsServer(bot, host="127.0.0.1", port=0).start()
    try:
        yield bot, server
    finally:
        bot.wait_idle(timeout=20)
        server.stop()
        bot.close()


@contextmanager
def shared_connector(module: Any) -> Iterator[str]:
    """The independent Bot Framework connector (../shared/fakes/fake_teams.py, loaded as `module`) on a free
    port of 127.0.0.1 with its default members; its URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), module.make_handler(module.State(module.DEFAULT_MEMBERS)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def wait_healthy(url: str, process: subprocess.Popen[str], timeout: float = 300) -> None:
    """Wait until `url` answers 200 (a `threadwise serve` process starting up); fail if the process exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"threadwise serve exited with {process.returncode}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer within {timeout} s")
