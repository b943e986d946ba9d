"""The Teams bot, measured: activity → first reply (the typing indicator) and activity → answer, for 1 and for 20
concurrent mentions, each answered exactly once; and the memory of one process serving Slack and Teams.

The bot is `threadwise serve --http PORT --teams PORT --no-sync`, a process of its own started through the CLI
with the offline default (no LLM: extractive answers; the default embedder unless --embedder) over the sample
wiki, indexed first with `threadwise index --docs`. Teams runs in its local-trial mode (no token checks:
THREADWISE_TEAMS_ALLOW_UNAUTHENTICATED=1); Slack in HTTP mode against FakeSlack, idle. This process plays the
Bot Framework: it POSTs channel messages that mention the bot to /api/messages, with `serviceUrl` pointing at
the FakeBotConnector it runs, so every timestamp comes from one clock. Each activity is POSTed twice (a
redelivery, the same id) to check that every mention is answered exactly once.

Per mention: first reply = the connector receives the typing activity in the thread; answer = it receives
the answer message. Memory: the serving process's VmRSS after warm-up, VmRSS and VmHWM at the end.

    .venv/bin/python bench/teams_bench.py                        # the default embedder
    .venv/bin/python bench/teams_bench.py --embedder hashing     # no model at all
    .venv/bin/python bench/teams_bench.py --latency 0.1          # each connector call takes 100 ms
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from slack_bench import (  # noqa: E402
    QUESTIONS,
    at_once,
    load_arguments,
    print_report,
    summary,
    under_load,
)

from tests.support.fake_bot_connector import FakeBotConnector  # noqa: E402
from tests.support.fake_slack import FakeSlack  # noqa: E402
from tests.support.llm import unused_port  # noqa: E402
from tests.support.teams_activities import CHANNEL, TeamsSender  # noqa: E402
from tests.support.teams_world import wait_healthy  # noqa: E402

SECRET = "0123456789abcdef0123456789abcdef"


@dataclass
class Sent:
    conversation: str
    start: float
    status: int


def mention(sender: TeamsSender, question: str) -> Sent:
    activity = sender.message(question)
    start = time.monotonic()
    status = sender.post(activity).status_code
    sender.post(activity)  # the same activity again: must not produce a second answer
    return Sent(f"{CHANNEL};messageid={activity['id']}", start, status)


def answers(connector: FakeBotConnector, conversation: str) -> list[Any]:
    return [c for c in connector.sent(conversation) if c.method == "send"]


def run_round(sender: TeamsSender, connector: FakeBotConnector, questions: list[str]) -> list[Sent]:
    """Send the mentions at once (one thread each) and wait until every one has its answer."""
    sent = at_once(lambda q: mention(sender, q), questions)
    connector.wait_for(lambda: all(answers(connector, s.conversation) for s in sent), timeout=600)
    return sent


def times(connector: FakeBotConnector, sent: list[Sent]) -> dict[str, list[float]]:
    result: dict[str, list[float]] = {"first_reply": [], "answer": [], "answers": [], "typing": []}
    for s in sent:
        typing = connector.sent(s.conversation, kind="typing")
        answered = answers(connector, s.conversation)
        result["first_reply"].append(min(c.at for c in typing + answered) - s.start)
        result["answer"].append(answered[0].at - s.start)
        result["answers"].append(float(len(answered)))
        result["typing"].append(float(len(typing)))
    return result


def bench(args: argparse.Namespace) -> dict[str, Any]:
    report: dict[str, Any] = {"embedder": args.embedder, "connector_latency_s": args.latency}
    with (
        FakeBotConnector(delay=args.latency) as connector,
        FakeSlack() as slack,
        tempfile.TemporaryDirectory() as data_dir,
    ):
        env = {
            **os.environ,
            "THREADWISE_DATA_DIR": data_dir,
            "THREADWISE_EMBEDDER": args.embedder,
            "THREADWISE_LLM": "off",
            "SLACK_BOT_TOKEN": slack.token,
            "SLACK_SIGNING_SECRET": SECRET,
            "SLACK_API_URL": slack.api_url,
            "THREADWISE_TEAMS_ALLOW_UNAUTHENTICATED": "1",
            "THREADWISE_TEAMS_WORKERS": str(args.workers),
        }
        for name in (
            "TEAMS_CLIENT_ID",
            "SLACK_APP_TOKEN",
            "CONFLUENCE_URL",
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
        ):
            env.pop(name, None)
        from threadwise.connectors.files import SAMPLE_WIKI_DIR

        cli = [sys.executable, "-m", "threadwise"]
        subprocess.run(
            [*cli, "index", "--docs", str(SAMPLE_WIKI_DIR)],
            env=env,
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        slack_port, teams_port = unused_port(), unused_port()
        command = [
            *cli,
            "serve",
            "--http",
            str(slack_port),
            "--teams",
            str(teams_port),
            "--host",
            "127.0.0.1",
            "--no-sync",
        ]
        bot = subprocess.Popen(
            command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        try:
            wait_healthy(f"http://127.0.0.1:{teams_port}/healthz", bot)
            wait_healthy(f"http://127.0.0.1:{slack_port}/healthz", bot)
            sender = TeamsSender(url=f"http://127.0.0.1:{teams_port}/api/messages", service_url=connector.url)
            run_round(sender, connector, [QUESTIONS[0]])  # warm-up
            sequential, concurrent = under_load(
                lambda batch: run_round(sender, connector, batch), pid=bot.pid, args=args, report=report
            )
            for name, sent in (("1 at a time", sequential), (f"{args.concurrency} concurrent", concurrent)):
                measured = times(connector, sent)
                report[name] = {
                    "http_status": sorted({s.status for s in sent}),
                    "first_reply": summary(measured["first_reply"]),
                    "answer": summary(measured["answer"]),
                    "answered_exactly_once": all(n == 1 for n in measured["answers"]),
                    "one_typing_indicator_each": all(n == 1 for n in measured["typing"]),
                }
        finally:
            bot.terminate()
            bot.wait(timeout=60)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    load_arguments(
        parser,
        single=30,
        rounds=5,
        workers_help="the bot's answer workers (THREADWISE_TEAMS_WORKERS)",
        latency=("--latency", "seconds each connector call takes"),
    )
    args = parser.parse_args()
    print_report(bench(args), args.out)


if __name__ == "__main__":
    main()
