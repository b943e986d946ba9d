"""Load and concurrency: a fair answer pool, per-user limits, and `threadwise serve --http` in its own process
taking a burst of first questions and following an index that another process (`threadwise index`) changes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_slack import FakeSlack
from tests.support.folder_source import index_folder
from tests.support.slack_events import SlackSender
from tests.support.slack_world import SIGNING_SECRET, World, build_world, running_bot
from threadwise.chat.pool import Activity, FairPool
from threadwise.connectors.files import SAMPLE_WIKI_DIR

ROOT = Path(__file__).resolve().parents[1]


def test_the_fair_pool_serves_users_in_turn() -> None:
    pool = FairPool(max_workers=1, name="t", activity=Activity())
    gate, order = threading.Event(), list[str]()
    pool.submit(gate.wait, owner="A")
    for i in range(5):
        pool.submit(order.append, f"A{i}", owner="A")
    pool.submit(order.append, "B0", owner="B")
    assert pool.in_flight("A") == 6 and pool.in_flight("B") == 1 and pool.waiting >= 6
    gate.set()
    pool.shutdown(wait=True)
    assert order.index("B0") <= 1  # B waits for at most one of A's queued questions, not for all five
    assert [o for o in order if o != "B0"] == ["A0", "A1", "A2", "A3", "A4"]


def test_long_questions_and_bursts_get_polite_limits(tmp_path: Path) -> None:
    world: World = build_world(tmp_path)
    with (
        FakeSlack() as slack,
        running_bot(world, slack, max_question_chars=100, max_questions_per_user=2) as run,
    ):
        run.bot.ready.clear()  # as while warming up: answers wait, placeholders do not
        event = {"type": "app_mention", "user": "U1", "channel": "C1"}
        run.send.event({**event, "text": "<@UBOT> " + "why " * 60, "ts": "1.1"})
        for n in range(2, 5):
            run.send.event({**event, "text": "<@UBOT> how do I request a new laptop?", "ts": f"1.{n}"})
        run.send.event({**event, "user": "U2", "text": "<@UBOT> how many vacation days?", "ts": "1.9"})
        slack.wait_for(lambda: len(slack.calls_to("chat.postMessage")) >= 5)
        posted = {c.params["thread_ts"]: c.params["text"] for c in slack.calls_to("chat.postMessage")}
        assert "too long" in posted["1.1"] and "239 characters" in posted["1.1"]
        held = [ts for ts in ("1.2", "1.3", "1.4") if "2 questions waiting" in posted[ts]]
        assert len(held) == 1  # the third of U1's at once (the listeners may take them in any order)
        assert (
            "too long" not in posted["1.9"] and "waiting for answers" not in posted["1.9"]
        )  # U2 is not held up
        run.bot.ready.set()
        slack.wait_for(lambda: len(slack.calls_to("chat.update")) >= 3)
        run.bot.wait_idle()
        answered = {c.params["ts"]: c.params["text"] for c in slack.calls_to("chat.update")}
        assert len(answered) == 3 and not any("went wrong" in t for t in answered.values())


# -- a real serving process ------------------------------------------------------------------------------------

NEW_PAGE = {
    "id": "zebra-crossing",
    "title": "Zebra crossing drill",
    "url": "https://wiki.example.com/spaces/ATLAS/pages/9/Zebra",
    "space": "ATLAS",
    "version": 1,
    "last_modified": "2024-11-01T10:00:00Z",
    "content": "<p>The zebra crossing drill happens every Thursday at 10:00 in the car park behind building C.</p>",
}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[FakeSlack, SlackSender, dict[str, str], subprocess.Popen[str]]]:
    with FakeSlack(users={"U1": {}}) as slack:
        env = {
            **os.environ,
            "THREADWISE_DATA_DIR": str(tmp_path / "data"),
            "THREADWISE_EMBEDDER": "hashing",
            "THREADWISE_LLM": "off",
            "SLACK_BOT_TOKEN": slack.token,
            "SLACK_SIGNING_SECRET": SIGNING_SECRET,
            "SLACK_API_URL": slack.api_url,
        }
        index_folder(tmp_path / "data", SAMPLE_WIKI_DIR)
        proc = subprocess.Popen(
            [sys.executable, "-m", "threadwise", "serve", "--http", "0", "--host", "127.0.0.1", "--no-sync"],
            env=env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            url = line.split("listens on ")[1].split()[0]
            yield slack, SlackSender(url=url, signing_secret=SIGNING_SECRET, team=slack.team_id), env, proc
        finally:
            proc.terminate()
            _out, err = proc.communicate(timeout=60)
            assert "Traceback" not in err, err[-3000:]


def ask_many(sender: SlackSender, questions: list[tuple[str, str]]) -> None:
    """Send the mentions all at once, from as many threads."""
    replies: list[Any] = []

    def send(channel: str, text: str) -> None:
        ts = f"1700000000.{abs(hash((channel, text))) % 10**6:06d}"
        user = f"U{channel}"  # a person per channel: twenty people, not one person's burst
        event = {"type": "app_mention", "user": user, "text": f"<@UBOT> {text}", "ts": ts, "channel": channel}
        replies.append(sender.event(event).status)

    threads = [threading.Thread(target=send, args=q) for q in questions]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert replies == [200] * len(questions)


def finished(slack: FakeSlack) -> list[str]:
    """The answers (edited placeholders) so far, as their blocks' text."""
    return [json.dumps(c.params.get("blocks")) for c in slack.calls_to("chat.update")]


def test_a_fresh_server_answers_20_first_questions_and_follows_another_process(
    served: Any, tmp_path: Path
) -> None:
    slack, sender, env, _proc = served
    ask_many(
        sender, [(f"C{i}", "What is Alice's action item from the October 14 meeting?") for i in range(20)]
    )
    slack.wait_for(lambda: len(finished(slack)) >= 20, timeout=120)
    assert not any("went wrong" in a for a in finished(slack)) and all(
        "Source" in a or "[1]" in a for a in finished(slack)
    )

    # another process changes the index while the server answers: every answer stays real, the new page is seen
    docs = tmp_path / "new"
    docs.mkdir()
    (docs / "zebra.json").write_text(json.dumps(NEW_PAGE))
    indexer = subprocess.Popen(
        [sys.executable, "-m", "threadwise", "index", "--docs", str(docs)],
        env=env,
        cwd=ROOT,
        stderr=subprocess.PIPE,
    )
    asked = 0
    while indexer.poll() is None and asked < 10:
        asked += 1
        ask_many(sender, [(f"D{asked}", "Who is on call this week?")])
        slack.wait_for(lambda n=20 + asked: len(finished(slack)) >= n, timeout=60)
    assert indexer.wait(timeout=300) == 0
    ask_many(sender, [("E1", "When is the zebra crossing drill?")])
    slack.wait_for(lambda: len(finished(slack)) >= 21 + asked, timeout=60)
    answers = finished(slack)
    assert not any("went wrong" in a for a in answers)
    assert "Thursday" in answers[-1] and "Zebra" in answers[-1]
