"""A replica in a process of its own that takes questions and never finishes answering them, to be killed.

`python -m tests.support.replica FOLDER DATABASE_URL SLACK_API_URL TTL_S` builds the real services over the
shared database (its own index of the test pages in FOLDER), starts the Slack bot on 127.0.0.1 with an answerer
that never returns, prints the events URL, and waits to be killed (kill -9: nothing is cleaned up). With
`teams` instead of SLACK_API_URL it starts the Teams bot (unauthenticated, as for a local trial) instead and
prints its /api/messages URL; it answers through the connector each activity names.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from tests.support.slack_world import SIGNING_SECRET, Replica, build_world
from threadwise.core.types import Answer, Evidence
from threadwise.db.base import make_engine, make_sessions
from threadwise.db.claims import ClaimStore
from threadwise.db.schema import upgrade
from threadwise.slack.app import SlackBot
from threadwise.slack.http_server import HttpServer
from threadwise.slack.settings import SlackSettings

ROOT = Path(__file__).resolve().parent.parent.parent


class NeverAnswers:
    """An answerer stuck for good (a model that hangs, a process about to die)."""

    name = "never"
    deterministic = True

    def answer(self, question: str, evidences: Sequence[Evidence]) -> Answer:
        threading.Event().wait()
        raise AssertionError("not reached")


def claim_store(database_url: str) -> ClaimStore:
    """The claims in the shared database, read and written as a replica would."""
    engine = make_engine(database_url)
    upgrade(engine)
    return ClaimStore(sessions=make_sessions(engine))


@contextmanager
def dying_replica(folder: Path, database_url: str, front: str, ttl_s: float = 1.0) -> Iterator[str]:
    """Start a replica (`front`: the fake Slack's API URL, or "teams") and give its URL; when the block
    ends it is killed (kill -9: no clean-up, no release, nothing said to anyone)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.replica", str(folder), database_url, front, str(ttl_s)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        yield url
    finally:
        process.kill()
        process.wait()


def main() -> None:
    folder, database_url, api_url, ttl_s = Path(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])
    world = build_world(
        folder,
        answerer=NeverAnswers(),
        database_url=database_url,
        replica=Replica("dying-replica", ttl_s=ttl_s, sweep_s=ttl_s),
    )
    if api_url == "teams":
        # imported here: a Slack replica starts without the Teams SDK (about a second of imports)
        from threadwise.teams.app import TeamsBot
        from threadwise.teams.serve import TeamsServer
        from threadwise.teams.settings import TeamsSettings

        teams = TeamsBot(
            conversations=world.conversations,
            admin=world.admin,
            settings=TeamsSettings(allow_unauthenticated=True),
        )
        print(TeamsServer(teams, host="127.0.0.1", port=0).start().url, flush=True)
    else:
        settings = SlackSettings(bot_token="xoxb-test-token", signing_secret=SIGNING_SECRET, api_url=api_url)
        bot = SlackBot(conversations=world.conversations, admin=world.admin, settings=settings)
        bot.learn_installation()
        server = HttpServer(bot, host="127.0.0.1", port=0)
        server.start()
        print(server.url, flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
