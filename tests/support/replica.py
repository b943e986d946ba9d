"""A Slack replica in a process of its own that takes questions and never finishes answering them, to be killed.

`python -m tests.support.replica FOLDER DATABASE_URL SLACK_API_URL TTL_S` builds the real services over the
shared database (its own index of the test pages in FOLDER), starts the Slack bot on 127.0.0.1 with an answerer
that never returns, prints the events URL, and waits to be killed (kill -9: nothing is cleaned up).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from tests.support.slack_world import SIGNING_SECRET, Replica, build_world
from threadwise.bot.http_server import HttpServer
from threadwise.bot.slack_app import SlackBot
from threadwise.bot.slack_settings import SlackSettings
from threadwise.core.types import Answer, Evidence


class NeverAnswers:
    """An answerer stuck for good (a model that hangs, a process about to die)."""

    name = "never"
    deterministic = True

    def answer(self, question: str, evidences: Sequence[Evidence]) -> Answer:
        threading.Event().wait()
        raise AssertionError("not reached")


def main() -> None:
    folder, database_url, api_url, ttl_s = Path(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])
    world = build_world(
        folder,
        answerer=NeverAnswers(),
        database_url=database_url,
        replica=Replica("dying-replica", ttl_s=ttl_s, sweep_s=ttl_s),
    )
    settings = SlackSettings(bot_token="xoxb-test-token", signing_secret=SIGNING_SECRET, api_url=api_url)
    bot = SlackBot(conversations=world.conversations, admin=world.admin, settings=settings)
    bot.learn_installation()
    server = HttpServer(bot, host="127.0.0.1", port=0)
    server.start()
    print(server.url, flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
