"""Auto mode, measured: a top-level question in a channel with `auto` on → its answer posted in a thread under it,
for 1 and for 20 concurrent questions (no mention, no placeholder: the answer is a new thread reply).

The bot process is bench/slack_bench.py's (`serve`: built by the composition root with the offline default, no
LLM, over the sample wiki, serving the Events API over HTTP), and so are the helpers; like it, this plays
Slack with the project's test fake and signed-request sender from tests/support. A workspace admin first types
`/threadwise auto on` in C1; then this process POSTs signed top-level `message` events, each from another
person and each also re-sent as a Slack retry (answered once), and serves the Web API: one clock.

Per question: ack = the HTTP response to the event; looking = the asker's ephemeral "Looking…"
(chat.postEphemeral); answer = chat.postMessage in the question's thread. A question the wiki does not answer
posts nothing public: it is counted apart (its "answer" is the asker's ephemeral note).

    .venv/bin/python bench/auto_mode_bench.py                     # the default embedder
    .venv/bin/python bench/auto_mode_bench.py --embedder hashing  # no model at all
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from slack_bench import (  # noqa: E402
    QUESTIONS,
    at_once,
    bot_process,
    load_arguments,
    one_then_rounds,
    print_report,
    summary,
)

from tests.support.fake_slack import FakeSlack  # noqa: E402
from tests.support.slack_events import SlackSender  # noqa: E402

CHANNEL = "C1"
ADMIN = "UWSADMIN"  # a workspace admin (users.info is_admin): may type /threadwise auto on
_ts = itertools.count(1)


def auto_on(sender: SlackSender, slack: FakeSlack) -> None:
    """`/threadwise auto on` in C1, typed by a workspace admin, as an admin sets up a help-desk channel."""
    reply = sender.command("auto on", user=ADMIN, channel=CHANNEL, response_url=slack.response_url())
    assert reply.status == 200, reply
    said = slack.wait_for(lambda: slack.calls_to("response_url"), timeout=60)
    assert "without a mention" in str(said[-1].params.get("text")), said[-1].params


@dataclass
class Sent:
    ts: str
    start: float
    acked: float
    status: int


def ask(sender: SlackSender, question: str, *, retry: bool) -> Sent:
    """A top-level channel message, no mention, as Slack sends `message.channels`; each from another person
    (one person's questions in flight are limited: THREADWISE_MAX_QUESTIONS_PER_USER)."""
    n = next(_ts)
    ts = f"1700000000.{n:06d}"
    event = {
        "type": "message",
        "channel": CHANNEL,
        "channel_type": "channel",
        "user": f"U{n}",
        "text": question,
        "ts": ts,
        "event_ts": ts,
    }
    event_id = f"Ev{ts.replace('.', '')}"
    start = time.monotonic()
    reply = sender.event(event, event_id=event_id)
    acked = time.monotonic()
    if retry:
        sender.event(event, event_id=event_id, retry_num=1)
    return Sent(ts, start, acked, reply.status)


def settled(slack: FakeSlack, ts: str) -> bool:
    """Answered in the thread, or told to the asker alone that the wiki has nothing (2 ephemerals)."""
    if slack.bot_messages(CHANNEL, ts):
        return True
    return len([e for e in slack.ephemerals(channel=CHANNEL) if e.get("thread_ts") == ts]) >= 2


def run_round(sender: SlackSender, slack: FakeSlack, questions: list[str], *, retry: bool) -> list[Sent]:
    sent = at_once(lambda q: ask(sender, q, retry=retry), questions)
    slack.wait_for(lambda: all(settled(slack, s.ts) for s in sent), timeout=600)
    return sent


def times(slack: FakeSlack, sent: list[Sent]) -> dict[str, Any]:
    posts: dict[str, list[Any]] = {}
    for call in slack.calls_to("chat.postMessage"):
        posts.setdefault(str(call.params.get("thread_ts")), []).append(call)
    notes: dict[str, list[Any]] = {}
    for call in slack.calls_to("chat.postEphemeral"):
        notes.setdefault(str(call.params.get("thread_ts")), []).append(call)
    result: dict[str, Any] = {"ack": [], "looking": [], "answer": [], "quiet": [], "posts": []}
    for s in sent:
        result["ack"].append(s.acked - s.start)
        mine = notes.get(s.ts, [])
        if mine:
            result["looking"].append(mine[0].at - s.start)
        if posts.get(s.ts):
            result["answer"].append(posts[s.ts][0].at - s.start)
        elif len(mine) >= 2:
            result["quiet"].append(mine[1].at - s.start)
        result["posts"].append(len(posts.get(s.ts, [])))
    return result


def bench(args: argparse.Namespace) -> dict[str, Any]:
    report: dict[str, Any] = {"embedder": args.embedder, "workers": args.workers}
    users = {ADMIN: {"is_admin": True}}
    with (
        FakeSlack(delay=args.slack_latency, users=users) as slack,
        bot_process(slack, args) as (_bot, sender),
    ):
        auto_on(sender, slack)
        run_round(sender, slack, [QUESTIONS[0]], retry=False)  # warm-up
        sequential, concurrent = one_then_rounds(
            lambda batch: run_round(sender, slack, batch, retry=True),
            single=args.single,
            rounds=args.rounds,
            concurrency=args.concurrency,
        )
        for name, sent in (("1 at a time", sequential), (f"{args.concurrency} concurrent", concurrent)):
            measured = times(slack, sent)
            report[name] = {
                "http_status": sorted({s.status for s in sent}),
                "ack": summary(measured["ack"]),
                "looking (ephemeral)": summary(measured["looking"]),
                "answer in thread": summary(measured["answer"]) if measured["answer"] else None,
                "not found, told privately": len(measured["quiet"]),
                "at most one public message each": all(n <= 1 for n in measured["posts"]),
            }
    return report


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    load_arguments(parser, single=10, rounds=3, what="questions")
    args = parser.parse_args()
    print_report(bench(args), args.out)


if __name__ == "__main__":
    main()
