"""Never silence across Teams replicas: two Teams bots (the real Teams SDK App on uvicorn) over one real database
(a SQLite file, and PostgreSQL), answering through the fake Bot Framework connector on 127.0.0.1. One replica is
a process of its own, killed (kill -9) while it answers; the other answers its question proactively, into the
conversation the question was asked in."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from microsoft_teams.api.activities import ActivityTypeAdapter

from tests.support.fake_bot_connector import ConnectorCall, FakeBotConnector
from tests.support.replica import claim_store, dying_replica
from tests.support.slack_world import Replica, build_world, replica_worlds, survivor_world
from tests.support.teams_activities import CHANNEL, PERSONAL, TENANT, TeamsSender
from tests.support.teams_world import APP_ID, running_teams
from threadwise.chat.handover import INTERRUPTED
from threadwise.db.conversations import ThreadKey
from threadwise.index.store import EvidenceIndex
from threadwise.teams.activity import activity_key, place_of
from threadwise.teams.handover import resume_payload

LAPTOP = "how do I request a new laptop?"


@pytest.fixture
def connector() -> Iterator[FakeBotConnector]:
    with FakeBotConnector() as fake:
        yield fake


def _messages(connector: FakeBotConnector, conversation: str) -> list[ConnectorCall]:
    """Messages the bot sent into `conversation` (not typing)."""
    return [c for c in connector.sent(conversation) if c.method == "send"]


def test_a_teams_replica_killed_while_answering_is_relieved_by_the_other(
    tmp_path: Path, database_url: str, index: EvidenceIndex, connector: FakeBotConnector
) -> None:
    with dying_replica(tmp_path / "dying", database_url, "teams") as url:
        sender = TeamsSender(url=url, service_url=connector.url)
        post = sender.message(LAPTOP)
        assert sender.post(post).status_code == 200
        thread = f"{CHANNEL};messageid={post['id']}"
        connector.wait_for(lambda: connector.sent(thread, kind="typing"))  # claimed, answering: kill -9
    assert _messages(connector, thread) == []
    store = claim_store(database_url)
    key = f"teams:{activity_key(place_of(ActivityTypeAdapter.validate_python(post)), post['id'])}"
    assert [o.key for o in store.orphans("teams:")] in ([], [key])  # open until its lease runs out

    survivor = survivor_world(tmp_path / "survivor", index, database_url)
    with running_teams(survivor, connector, authenticated=True) as run:
        [answer] = connector.wait_for(lambda: _messages(connector, thread))
        run.bot.wait_idle()
        redelivered = run.send.post(post, token=connector.sign(APP_ID))  # Teams sends it again
        assert redelivered.status_code == 200
        run.bot.wait_idle()
    assert "open a ticket in the IT portal" in answer.body["text"]
    assert answer.authorization.startswith("Bearer ")  # sent with the survivor's own credentials
    assert len(_messages(connector, thread)) == 1  # the redelivered activity was not answered again
    key_of_thread = ThreadKey("teams", TENANT, CHANNEL, post["id"])
    [turn] = survivor.conversations.history(key_of_thread)
    assert turn.question == LAPTOP
    answer_id = next(iter(connector.activities[thread]))
    assert survivor.conversations.turn_for_message(key_of_thread, answer_id) == turn.turn_id  # 👍/👎 work
    assert store.orphans("teams:") == [] and store.renew("survivor", 30) == 0


def test_a_teams_question_that_outlived_its_replicas_is_told_to_ask_again(
    tmp_path: Path, index: EvidenceIndex, connector: FakeBotConnector
) -> None:
    """Two replicas died on it already: the personal chat hears it was interrupted, not silence."""
    url = f"sqlite:///{tmp_path / 'shared.sqlite'}"
    store = claim_store(url)
    sender = TeamsSender(url="http://127.0.0.1:9/unused", service_url=connector.url)
    post = sender.message(LAPTOP, where="personal", mention=False)
    place = place_of(ActivityTypeAdapter.validate_python(post))
    key = f"teams:{activity_key(place, post['id'])}"
    assert store.claim(key, "first", 0.0, resume_payload(place, LAPTOP, post["id"]))
    for holder in ("second", "third"):
        assert store.take_over(store.orphans("teams:")[0], holder, 0.0) is not None
    survivor = build_world(tmp_path, index=index, database_url=url, replica=Replica("survivor", sweep_s=0.2))
    with running_teams(survivor, connector) as run:
        [told] = connector.wait_for(lambda: _messages(connector, PERSONAL))
        run.bot.wait_idle()
    assert INTERRUPTED in told.body["text"]
    assert store.orphans("teams:") == []
    assert survivor.store.conversations() == []  # not answered: nothing asked was stored


def test_teams_questions_answered_normally_leave_no_claim_open(
    tmp_path: Path, database_url: str, index: EvidenceIndex, connector: FakeBotConnector
) -> None:
    worlds = replica_worlds(tmp_path, index, database_url, "replica-a", "replica-b")
    with running_teams(worlds[0], connector) as a, running_teams(worlds[1], connector) as b:
        posts = [a.send.message(LAPTOP, where="personal", mention=False) for _ in range(3)]
        for post in posts:  # each delivered to both replicas, as a retry through a balancer may
            assert a.send.post(post).status_code == 200 and b.send.post(post).status_code == 200
        connector.wait_for(lambda: len(_messages(connector, PERSONAL)) >= 3)
        a.bot.wait_idle()
        b.bot.wait_idle()
    assert len(_messages(connector, PERSONAL)) == 3  # each answered once
    store = claim_store(database_url)
    assert store.orphans("teams:") == [] and store.renew("replica-a", 30) + store.renew("replica-b", 30) == 0
