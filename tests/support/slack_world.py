"""A small real Threadwise for Slack tests and the Slack benchmark: a SQLite file and an index in a folder,
three wiki pages indexed with the offline HashingEmbedder, the real ConversationService and AdminService,
and the Slack bot on a real HTTP server, talking to a FakeSlack.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tests.support.fake_slack import FakeSlack
from tests.support.slack_events import SlackSender
from threadwise.chat.conversations import ConversationService
from threadwise.chat.handover import ClaimKeeper
from threadwise.core.answer.extractive import ExtractiveAnswerer
from threadwise.core.complete.history import HistoryCompleter
from threadwise.core.pipeline import Pipeline
from threadwise.core.protocols import Answerer
from threadwise.core.retrieve.retriever import Retriever
from threadwise.core.types import Page
from threadwise.db.base import make_engine, make_sessions
from threadwise.db.claims import ClaimStore
from threadwise.db.conversations import ConversationStore
from threadwise.db.schema import upgrade
from threadwise.index.indexer import index_pages
from threadwise.index.store import EvidenceIndex
from threadwise.models.embedders import HashingEmbedder
from threadwise.slack.app import SlackBot
from threadwise.slack.http_server import HttpLimits, HttpServer
from threadwise.slack.settings import SlackSettings
from threadwise.sync.admin import AdminService

SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
ADMIN = "UADMIN"

PAGES = (
    Page(
        id="101",
        space="IT",
        title="Requesting a new laptop",
        url="https://wiki.example/display/IT/Laptops",
        body=(
            "<h1>Laptops</h1><p>To request a new laptop, open a ticket in the IT portal under Hardware. "
            "Your team lead approves the request within two working days.</p>"
            "<p>Old laptops are returned to the IT desk on floor 3.</p>"
        ),
        last_modified="2024-05-03T10:00:00Z",
    ),
    Page(
        id="102",
        space="HR",
        title="Vacation policy",
        url="https://wiki.example/display/HR/Vacation",
        body=(
            "<p>Every employee has 30 vacation days per year. Vacation requests go to the team lead "
            "in the HR tool at least two weeks ahead.</p>"
        ),
        last_modified="2024-04-01T08:30:00Z",
    ),
    Page(
        id="103",
        space="IT",
        title="On-call rota",
        url="https://wiki.example/display/IT/Oncall",
        body=(
            "<table><tr><th>Week</th><th>Engineer</th></tr><tr><td>1</td><td>Alice Jones</td></tr>"
            "<tr><td>2</td><td>Bob Smith</td></tr></table>"
        ),
        last_modified="2024-06-10T12:00:00Z",
    ),
)


@dataclass(frozen=True)
class Replica:
    """A replica's name and how fast it renews its claims and looks for other replicas' orphans."""

    name: str
    ttl_s: float = 30.0
    sweep_s: float = 15.0


@dataclass
class World:
    conversations: ConversationService
    admin: AdminService
    index: EvidenceIndex
    store: ConversationStore


def build_index(folder: Path, pages: tuple[Page, ...] = PAGES) -> EvidenceIndex:
    """An evidence index in `folder` holding `pages`, embedded with the offline HashingEmbedder."""
    index = EvidenceIndex(directory=folder, embedder=HashingEmbedder())
    if pages:
        index_pages(index, list(pages))
    return index


def build_world(
    folder: Path,
    *,
    answerer: Answerer | None = None,
    index: EvidenceIndex | None = None,
    database_url: str | None = None,
    replica: Replica | None = None,
) -> World:
    """The real services over a SQLite file in `folder` and `index` (default: PAGES indexed in `folder`).

    `answerer` defaults to the offline extractive one. The index is only read, so tests may share one.
    `database_url`: another database (replicas share one); `replica`: questions in progress are claimed for
    hand-over under this replica's name.
    """
    engine = make_engine(database_url or f"sqlite:///{folder / 'threadwise.sqlite'}")
    upgrade(engine)
    sessions = make_sessions(engine)
    index = index if index is not None else build_index(folder / "index")
    pipeline = Pipeline(
        completer=HistoryCompleter(),
        retriever=Retriever(index=index, embedder=index.embedder),
        answerer=answerer or ExtractiveAnswerer(embedder=index.embedder),
    )
    store = ConversationStore(sessions=sessions)
    claims = None
    if replica is not None:
        claims = ClaimKeeper(
            store=ClaimStore(sessions=sessions),
            replica=replica.name,
            ttl_s=replica.ttl_s,
            sweep_s=replica.sweep_s,
        )
    conversations = ConversationService(pipeline=pipeline, store=store, index=index, claims=claims)
    return World(conversations, AdminService(sessions=sessions, index=index), index, store)


def replica_worlds(folder: Path, index: EvidenceIndex, database_url: str, *names: str) -> list[World]:
    """One World per replica name (each its own folder under `folder`), all over the one database."""
    return [
        build_world(folder / n, index=index, database_url=database_url, replica=Replica(n)) for n in names
    ]


def survivor_world(folder: Path, index: EvidenceIndex, database_url: str) -> World:
    """The replica that outlives another: a 1 s lease and a sweep every 0.2 s, so it takes over at once."""
    return build_world(
        folder, index=index, database_url=database_url, replica=Replica("survivor", ttl_s=1.0, sweep_s=0.2)
    )


@dataclass
class Running:
    bot: SlackBot
    slack: FakeSlack
    send: SlackSender


@contextmanager
def running_bot(
    world: World, slack: FakeSlack, *, limits: HttpLimits | None = None, **settings: Any
) -> Iterator[Running]:
    """The Slack bot for `world` on a real HTTP server at 127.0.0.1 (a free port), talking to `slack`.

    `settings` override SlackSettings fields (e.g. follow_ups_without_mention=False); `limits` the server's.
    """
    base = SlackSettings(
        bot_token=slack.token, signing_secret=SIGNING_SECRET, api_url=slack.api_url, admin_user_ids=(ADMIN,)
    )
    bot = SlackBot(conversations=world.conversations, admin=world.admin, settings=replace(base, **settings))
    bot.learn_installation()  # as `serve` does: only this workspace's and app's requests are answered
    slack.calls.clear()  # tests look at what requests cause, not at start-up
    server = HttpServer(bot, host="127.0.0.1", port=0, limits=limits)
    server.start()
    try:
        yield Running(
            bot, slack, SlackSender(url=server.url, signing_secret=SIGNING_SECRET, team=slack.team_id)
        )
    finally:
        server.stop()
        bot.wait_idle(timeout=10)
        bot.close()
