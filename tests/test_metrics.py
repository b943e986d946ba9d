"""`/metrics` on the Slack and Teams ports: real questions, votes and an Explain through the real bots over
HTTP, then a scrape over HTTP read with prometheus-client's own parser. The counters are process-wide, so
each test compares a scrape after with one before."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.fake_bot_connector import FakeBotConnector
from tests.support.fake_confluence import FakeConfluence, tree_wiki
from tests.support.fake_openai import FakeOpenAI
from tests.support.fake_slack import FakeSlack
from tests.support.llm import chat_for
from tests.support.slack_driver import mention, press, text_of, vote, wait_answers
from tests.support.slack_world import Running, World, running_bot
from tests.support.sync_env import make_env
from tests.support.teams_activities import PERSONAL
from tests.support.teams_world import running_teams
from threadwise import metrics
from threadwise.connectors.scope import SpaceScope
from threadwise.core.protocols import ChatError
from threadwise.sync.permission_sync import PermissionSyncer

ROOT = Path(__file__).resolve().parents[1]
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(url: str) -> Samples:
    reply = httpx.get(url, timeout=10)
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith("text/plain; version=0.0.4")
    return parse(reply.text)


def parse(text: str) -> Samples:
    """Prometheus' text format, read by prometheus-client's own parser."""
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


@pytest.fixture
def run(world: World) -> Iterator[Running]:
    with FakeSlack(users={"U1": {}}) as slack, running_bot(world, slack) as running:
        yield running


def test_slack_questions_votes_and_explain_are_counted(run: Running, world: World) -> None:
    url = run.send.url.replace("/slack/events", "/metrics")
    before = scrape(url)
    ts = mention(run)
    answered = wait_answers(run, "C1", ts)[0]
    wait_answers(run, "C1", mention(run, "<@UBOT> what is the airspeed velocity of an unladen swallow?"))
    vote(run, answered, "up")
    press(run, answered, "explain")
    run.slack.wait_for(lambda: any("Why this answer" in text_of(m) for m in run.slack.bot_messages("C1", ts)))
    run.bot.wait_idle()
    after = scrape(url)

    def grew(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert grew("threadwise_questions_total", platform="slack", outcome="answered") == 1
    assert grew("threadwise_questions_total", platform="slack", outcome="not_found") == 1
    assert grew("threadwise_answer_seconds_count", platform="slack") == 2
    assert grew("threadwise_answer_seconds_sum", platform="slack") > 0
    for stage in ("completion", "retrieval", "answer"):
        assert grew("threadwise_stage_seconds_count", stage=stage) == 2
    assert grew("threadwise_stage_seconds_count", stage="attribution") == 1
    assert grew("threadwise_explains_total", result="computed") == 1
    assert grew("threadwise_votes_total", vote="up") == 1
    assert value(after, "threadwise_questions_waiting") == 0  # the fair pool, idle again
    # read from the index when scraped
    assert value(after, "threadwise_index_pages") == 3
    assert value(after, "threadwise_index_evidences") == world.index.count() > 0


def test_teams_questions_are_counted_on_the_teams_port(world: World) -> None:
    with FakeBotConnector() as connector, running_teams(world, connector) as run:
        url = run.server.url.replace("/api/messages", "/metrics")
        before = scrape(url)
        run.send.post(run.send.message("how do I get a new laptop?", where="personal", mention=False))
        connector.wait_for(lambda: [c for c in connector.sent(PERSONAL) if c.method == "send"])
        run.bot.wait_idle()
        after = scrape(url)
    key = ("threadwise_questions_total", frozenset({("platform", "teams"), ("outcome", "answered")}))
    assert after.get(key, 0.0) - before.get(key, 0.0) == 1
    assert value(after, "threadwise_index_pages") == 3


def _exposed() -> Samples:
    return parse(metrics.exposition()[0].decode())


def test_sync_runs_and_their_pages_are_counted(tmp_path: Path) -> None:
    with FakeConfluence(pages=tree_wiki(), context_path="/confluence") as fake:
        env = make_env(tmp_path, fake.url)
        before = _exposed()
        first = env.syncer.sync(SpaceScope.of("DOCS"))
        fake.delete_page("113")
        second = env.syncer.sync(SpaceScope.of("DOCS"))
        permissions = PermissionSyncer(syncer=env.syncer).sync(SpaceScope.of("DOCS"))
        after = _exposed()
    assert (first.status, second.status, permissions.status) == ("ok", "ok", "ok")

    def grew(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert grew("threadwise_sync_runs_total", result="ok") == 2
    assert grew("threadwise_sync_pages_total", change="added") == first.counts.added > 0
    assert grew("threadwise_sync_pages_total", change="deleted") == 1
    assert grew("threadwise_sync_seconds_count") == 2
    assert grew("threadwise_permission_sync_runs_total", result="ok") == 1
    for name in ("threadwise_sync", "threadwise_permission_sync"):  # how old the last good run is
        assert time.time() - value(after, f"{name}_last_success_timestamp_seconds") < 60


def test_llm_calls_errors_and_tokens_are_counted() -> None:
    with FakeOpenAI(replies=["four words in reply"]) as llm:
        chat = chat_for(llm, max_retries=0)
        before = _exposed()
        assert chat.chat([{"role": "user", "content": "say four words"}]) == "four words in reply"
        llm.fail(500)
        with pytest.raises(ChatError):
            chat.chat([{"role": "user", "content": "again"}])
        after = _exposed()

    def grew(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert grew("threadwise_llm_calls_total", model="fake-model", result="ok") == 1
    assert grew("threadwise_llm_calls_total", model="fake-model", result="error") == 1
    assert (
        grew("threadwise_llm_tokens_total", model="fake-model", kind="prompt") == 3
    )  # as the server counted
    assert grew("threadwise_llm_tokens_total", model="fake-model", kind="completion") == 4


_RECORD = (
    "from threadwise import metrics; metrics.question('slack', 'failed', 0.2, {'retrieval': 50.0}); "
    "metrics.sync_run('ok', 2, 1, 0, 1, 3.0)"
)
_SCRAPE = "import sys; from threadwise import metrics; sys.stdout.write(metrics.exposition()[0].decode())"


def test_several_processes_add_up_in_multi_process_mode(tmp_path: Path) -> None:
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    for _ in range(2):  # two replicas on one host, each recording, then gone
        subprocess.run([sys.executable, "-c", _RECORD], env=env, cwd=ROOT, check=True, timeout=60)
    text = subprocess.run(
        [sys.executable, "-c", _SCRAPE],
        env=env,
        cwd=ROOT,
        check=True,
        timeout=60,
        capture_output=True,
        text=True,
    ).stdout
    samples = parse(text)
    assert value(samples, "threadwise_questions_total", platform="slack", outcome="failed") == 2
    assert value(samples, "threadwise_stage_seconds_count", stage="retrieval") == 2
    assert value(samples, "threadwise_sync_runs_total", result="ok") == 2
    assert value(samples, "threadwise_sync_pages_total", change="added") == 4
    assert value(samples, "threadwise_sync_pages_total", change="failed") == 2
    assert value(samples, "threadwise_sync_seconds_sum") == 6.0


def test_the_fair_pools_waits_are_measured() -> None:
    """One worker, two jobs: the second waits for the first (0.2 s), and both waits are observed."""
    from threadwise.chat.pool import Activity, FairPool

    before = _exposed()
    pool = FairPool(max_workers=1, name="wait-test", activity=Activity())
    first = pool.submit(time.sleep, 0.2, owner="a")
    second = pool.submit(time.sleep, 0, owner="b")
    first.result(timeout=5)
    second.result(timeout=5)
    pool.shutdown()
    after = _exposed()
    assert (
        value(after, "threadwise_queue_wait_seconds_count")
        - value(before, "threadwise_queue_wait_seconds_count")
        == 2
    )
    waited = value(after, "threadwise_queue_wait_seconds_sum") - value(
        before, "threadwise_queue_wait_seconds_sum"
    )
    assert 0.15 < waited < 5
