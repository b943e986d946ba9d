"""SIGTERM to a real `threadwise serve --http` process with two questions in flight: it stops taking requests
at once, finishes the answer that can finish within the drain, leaves the stuck one's claim for another replica
to take over, and exits 0 within its documented bound."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from functools import partial
from pathlib import Path

from tests.support.fake_openai import FakeOpenAI
from tests.support.fake_slack import FakeSlack
from tests.support.folder_source import index_folder
from tests.support.llm import unused_port
from tests.support.replica import claim_store
from tests.support.slack_events import SlackSender
from tests.support.teams_world import wait_healthy

ROOT = Path(__file__).resolve().parents[1]
SECRET = "0123456789abcdef0123456789abcdef"
SAMPLE = ROOT / "threadwise" / "sample_wiki"
DRAIN_S = 6  # THREADWISE_DRAIN_SECONDS here: two model calls' time, instead of the default 15


def _asked(llm: FakeOpenAI, count: int) -> bool:
    return len(llm.requests) >= count


def _refused(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=2).close()
    except urllib.error.HTTPError:
        return False  # answered: still taking requests
    except OSError:
        return True
    return False


def test_sigterm_finishes_or_hands_over_the_answers_in_flight_and_exits_0(tmp_path: Path) -> None:
    # every model call takes 3 s: a question is still being answered when SIGTERM comes; one call hangs
    with FakeOpenAI(delay=3.0) as llm, FakeSlack(users={"U1": {}, "U2": {}}) as slack:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("THREADWISE_", "OPENAI_", "SLACK_"))}
        data = tmp_path / "data"
        env |= {"HOME": str(tmp_path), "THREADWISE_DATA_DIR": str(data)}
        env |= {"THREADWISE_EMBEDDER": "hashing", "SLACK_SIGNING_SECRET": SECRET}
        env |= {"SLACK_BOT_TOKEN": slack.token, "SLACK_API_URL": slack.api_url}
        index_folder(data, SAMPLE)
        env |= {"THREADWISE_LLM_BASE_URL": llm.url, "THREADWISE_LLM_API_KEY": llm.api_key}
        env |= {"THREADWISE_LLM_TIMEOUT": "120", "THREADWISE_LEASE_TTL_SECONDS": "5"}
        env |= {"THREADWISE_DRAIN_SECONDS": str(DRAIN_S)}
        port = unused_port()
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "threadwise",
                "serve",
                "--http",
                str(port),
                "--host",
                "127.0.0.1",
                "--no-sync",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            wait_healthy(f"http://127.0.0.1:{port}/healthz", process, timeout=180)
            sender = SlackSender(
                url=f"http://127.0.0.1:{port}/slack/events", signing_secret=SECRET, team=slack.team_id
            )
            stuck, ts = "1700000000.000100", "1700000000.000200"
            llm.stall(300)  # the first question's model call never returns in time
            for count, (when, user) in enumerate(((stuck, "U2"), (ts, "U1")), start=1):
                event = {"type": "app_mention", "user": user, "text": "<@UBOT> who is on call?", "ts": when}
                assert sender.event({**event, "channel": "C1", "event_ts": when}).status == 200
                slack.wait_for(partial(_asked, llm, count), timeout=60)  # its model call is under way
            process.send_signal(signal.SIGTERM)
            stopped = time.monotonic()
            deadline = stopped + 5
            while not _refused(f"http://127.0.0.1:{port}/healthz") and time.monotonic() < deadline:
                time.sleep(0.1)
            assert _refused(f"http://127.0.0.1:{port}/healthz")  # no new requests taken
            out, err = process.communicate(timeout=10 + DRAIN_S + 10)
            took = time.monotonic() - stopped
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
        assert process.returncode == 0, err
        assert took < 10 + DRAIN_S  # the server's stop (10 s at most) and the drain
        answers = [m for m in slack.bot_messages("C1", ts) if "explain" in str(m.get("blocks"))]
        assert answers, slack.bot_messages("C1", ts)  # the question in flight got its answer, not silence
        assert "left to another replica" in err
        # the stuck one is left claimed, unanswered: once its lease (5 s) lapses another replica adopts it
        claims = claim_store(f"sqlite:///{tmp_path / 'data' / 'threadwise.sqlite'}")
        orphans = slack.wait_for(lambda: claims.orphans("slack:"), timeout=20)
        assert [o.key for o in orphans] == [f"slack:{slack.team_id}:C1:{stuck}"]  # the stuck one alone
