"""The Slack bot, measured: event → acknowledgement and event → posted answer, for 1 and for 20 concurrent mentions.

The bot runs in a process of its own (this script's `serve` mode), built by the composition root with the
offline default (no LLM: extractive answers; the default embedder unless --embedder) over the sample wiki,
serving the Events API over HTTP. This process plays Slack: it POSTs signed `app_mention` events and
serves the Web API (FakeSlack), so every timestamp comes from one clock. Each event is also re-sent as a
Slack retry (X-Slack-Retry-Num: 1) to check that every mention is answered exactly once.

Per mention: ack = the HTTP response to the event; placeholder = chat.postMessage in the thread;
answer = chat.update of that placeholder. Memory: the bot process's VmRSS after warm-up, VmHWM at the end.

    .venv/bin/python bench/slack_bench.py                        # the default embedder
    .venv/bin/python bench/slack_bench.py --embedder hashing     # no model at all
    .venv/bin/python bench/slack_bench.py --slack-latency 0.1    # each Web API call takes 100 ms
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from procstat import memory_kb  # noqa: E402  (beside this script)

from tests.support.fake_slack import FakeSlack  # noqa: E402
from tests.support.slack_events import SlackSender  # noqa: E402

SECRET = "0123456789abcdef0123456789abcdef"
T = TypeVar("T")
QUESTIONS = (
    "When does the primary on-call engineer change?",
    "How fast must we respond to a SEV1 incident?",
    "Who is paged for a SEV2?",
    "How do I set up my development machine?",
    "What failed in the release 4.2 test report?",
    "Wie viele Urlaubstage habe ich?",
    "What was decided in the weekly sync on October 14?",
)
_users = itertools.count(1)
_ts = itertools.count(1)


# -- the bot process -----------------------------------------------------------------------------------------


def serve(args: argparse.Namespace) -> None:
    """Build the bot like `threadwise serve --http`, index the sample wiki, print the port, serve until stdin closes."""
    from threadwise.connectors.files import SAMPLE_WIKI_DIR, load_pages
    from threadwise.index.indexer import index_pages
    from threadwise.settings import load_settings
    from threadwise.slack.app import build_slack_bot
    from threadwise.slack.http_server import HttpServer
    from threadwise.slack.settings import SlackSettings
    from threadwise.wiring import Threadwise

    env = {
        "THREADWISE_DATA_DIR": args.data_dir,
        "THREADWISE_EMBEDDER": args.embedder,
        "THREADWISE_LLM": "off",
        "SLACK_BOT_TOKEN": args.token,
        "SLACK_SIGNING_SECRET": SECRET,
        "SLACK_API_URL": args.slack_url,
        "THREADWISE_SLACK_WORKERS": str(args.workers),
    }
    tw = Threadwise(settings=load_settings(env=env))
    tw.warm_up()
    pages, _failures = load_pages(SAMPLE_WIKI_DIR)
    index_pages(tw.index, pages)
    bot = build_slack_bot(
        conversations=tw.conversations, admin=tw.admin, settings=SlackSettings.from_env(tw.settings.env)
    )
    server = HttpServer(bot, host="127.0.0.1", port=0)
    server.start()
    print(json.dumps({"port": server.port}), flush=True)
    sys.stdin.read()  # the benchmark closes stdin when it is done
    server.stop()
    bot.close()


# -- playing Slack ------------------------------------------------------------------------------------------


@dataclass
class Sent:
    ts: str
    start: float
    acked: float
    status: int


def mention(sender: SlackSender, question: str, *, retry: bool) -> Sent:
    ts = f"1700000000.{next(_ts):06d}"
    event = {
        "type": "app_mention",
        # one person per mention: a person's fourth question at once is held back (politely, not answered),
        # THREADWISE_MAX_QUESTIONS_PER_USER; this bench measures answers
        "user": f"U{next(_users)}",
        "text": f"<@UBOT> {question}",
        "ts": ts,
        "channel": "C1",
        "event_ts": ts,
    }
    event_id = f"Ev{ts.replace('.', '')}"
    start = time.monotonic()
    reply = sender.event(event, event_id=event_id)
    acked = time.monotonic()
    if retry:  # Slack's re-send of the same event: must not produce a second answer
        sender.event(event, event_id=event_id, retry_num=1)
    return Sent(ts, start, acked, reply.status)


def at_once(send: Callable[[str], T], questions: Sequence[str]) -> list[T]:
    """Send every question at the same moment (a barrier, one thread each); what each send returned."""
    start = threading.Barrier(len(questions))

    def go(q: str) -> T:
        start.wait()
        return send(q)

    with ThreadPoolExecutor(max_workers=len(questions)) as pool:
        return list(pool.map(go, questions))


def one_then_rounds(
    run_round: Callable[[list[str]], list[T]], *, single: int, rounds: int, concurrency: int
) -> tuple[list[T], list[T]]:
    """`single` questions one at a time, then `rounds` rounds of `concurrency` at once (the benches' load)."""
    sequential: list[T] = []
    for i in range(single):
        sequential += run_round([QUESTIONS[i % len(QUESTIONS)]])
    concurrent: list[T] = []
    for r in range(rounds):
        concurrent += run_round([QUESTIONS[(r + i) % len(QUESTIONS)] for i in range(concurrency)])
    time.sleep(0.5)  # let any (wrong) second answer arrive before counting
    return sequential, concurrent


def under_load(
    run_round: Callable[[list[str]], list[T]], *, pid: int, args: argparse.Namespace, report: dict[str, Any]
) -> tuple[list[T], list[T]]:
    """The benches' load (`one_then_rounds`, sized by `args`) on a warmed-up bot, with the bot process's memory
    before and after it in `report`."""
    report["memory_after_warm_up_kb"] = memory_kb(pid)
    sent = one_then_rounds(run_round, single=args.single, rounds=args.rounds, concurrency=args.concurrency)
    report["memory_end_kb"] = memory_kb(pid)
    return sent


def run_round(sender: SlackSender, slack: FakeSlack, questions: list[str], *, retry: bool) -> list[Sent]:
    """Send the mentions at once (one thread each) and wait until every one has its answer."""
    sent = at_once(lambda q: mention(sender, q, retry=retry), questions)
    slack.wait_for(lambda: all(answered(slack, s.ts) for s in sent), timeout=600)
    return sent


def answered(slack: FakeSlack, thread_ts: str) -> bool:
    return any(m.get("edited") for m in slack.bot_messages("C1", thread_ts))


def times(slack: FakeSlack, sent: list[Sent]) -> dict[str, list[float]]:
    """Per mention: seconds from the event to ack, placeholder and answer; and how many answers it got."""
    posts: dict[str, list[Any]] = {}
    for call in slack.calls_to("chat.postMessage"):
        posts.setdefault(str(call.params.get("thread_ts")), []).append(call)
    updates: dict[str, list[Any]] = {}
    for call in slack.calls_to("chat.update"):
        updates.setdefault(str(call.params.get("ts")), []).append(call)
    result: dict[str, list[float]] = {"ack": [], "placeholder": [], "answer": [], "answers": []}
    for s in sent:
        [placeholder] = posts[s.ts]  # exactly one message in the thread
        answer = updates[placeholder.response["ts"]]
        result["ack"].append(s.acked - s.start)
        result["placeholder"].append(placeholder.at - s.start)
        result["answer"].append(answer[0].at - s.start)
        result["answers"].append(float(len(posts[s.ts]) * len(answer)))
    return result


def load_arguments(
    parser: argparse.ArgumentParser,
    *,
    single: int,
    rounds: int,
    what: str = "mentions",
    workers_help: str = "the bot's answer workers",
    latency: tuple[str, str] = ("--slack-latency", "seconds each Web API call takes"),
) -> None:
    """The load options every bot bench takes: the embedder, the questions sent (`single` one at a time, then
    `rounds` of `--concurrency`), the bot's workers, the fake's latency (flag, help) and where to write."""
    parser.add_argument("--embedder", default="e5", help="e5 (default), use, minilm, bge-m3 or hashing")
    parser.add_argument("--single", type=int, default=single, help=f"{what} sent one at a time")
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=rounds, help=f"rounds of concurrent {what}")
    parser.add_argument("--workers", type=int, default=8, help=workers_help)
    parser.add_argument(latency[0], type=float, default=0.0, help=latency[1])
    parser.add_argument("--out", type=Path, help="also write the report as JSON")


def print_report(report: dict[str, Any], out: Path | None) -> None:
    """The report as JSON on stdout, and in `out` when given."""
    print(json.dumps(report, indent=2))
    if out:
        out.write_text(json.dumps(report, indent=2))


def summary(values: list[float]) -> dict[str, float]:
    a = np.array(values) * 1000
    return {
        "n": len(values),
        "p50_ms": round(float(np.percentile(a, 50)), 1),
        "p95_ms": round(float(np.percentile(a, 95)), 1),
        "p99_ms": round(float(np.percentile(a, 99)), 1),
        "max_ms": round(float(a.max()), 1),
    }


@contextmanager
def bot_process(
    slack: FakeSlack, args: argparse.Namespace
) -> Iterator[tuple[subprocess.Popen[str], SlackSender]]:
    """The bot in a process of its own (this script's `serve` mode, `args.embedder` and `args.workers`) against
    `slack`, and a sender of signed events to it; the process ends when the block does."""
    with tempfile.TemporaryDirectory() as data_dir:
        command = [
            sys.executable,
            str(Path(__file__).resolve()),
            "serve",
            "--slack-url",
            slack.api_url,
            "--token",
            slack.token,
            "--data-dir",
            data_dir,
            "--embedder",
            args.embedder,
            "--workers",
            str(args.workers),
        ]
        bot = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)
        try:
            assert bot.stdout is not None
            port = json.loads(bot.stdout.readline())["port"]
            sender = SlackSender(
                url=f"http://127.0.0.1:{port}/slack/events", signing_secret=SECRET, team=slack.team_id
            )
            yield bot, sender
        finally:
            assert bot.stdin is not None
            bot.stdin.close()
            bot.wait(timeout=60)


def bench(args: argparse.Namespace) -> dict[str, Any]:
    report: dict[str, Any] = {
        "embedder": args.embedder,
        "slack_latency_s": args.slack_latency,
        "workers": args.workers,
    }
    with FakeSlack(delay=args.slack_latency) as slack, bot_process(slack, args) as (bot, sender):
        run_round(sender, slack, [QUESTIONS[0]], retry=False)  # warm-up: first request, auth.test
        sequential, concurrent = under_load(
            lambda batch: run_round(sender, slack, batch, retry=True), pid=bot.pid, args=args, report=report
        )
        for name, sent in (("1 at a time", sequential), (f"{args.concurrency} concurrent", concurrent)):
            measured = times(slack, sent)
            report[name] = {
                "http_status": sorted({s.status for s in sent}),
                "ack": summary(measured["ack"]),
                "placeholder": summary(measured["placeholder"]),
                "answer": summary(measured["answer"]),
                "answered_exactly_once": all(n == 1 for n in measured["answers"]),
            }
    return report


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="mode")
    p = sub.add_parser("serve", help="(internal) the bot process")
    p.add_argument("--slack-url", required=True)
    p.add_argument("--token", required=True)
    p.add_argument("--data-dir", required=True)
    p.add_argument("--embedder", default="e5")
    p.add_argument("--workers", type=int, default=8)
    load_arguments(parser, single=30, rounds=5)
    args = parser.parse_args()
    if args.mode == "serve":
        serve(args)
        return
    print_report(bench(args), args.out)


if __name__ == "__main__":
    main()
