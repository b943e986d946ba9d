"""Exactly once and never silence across replicas: two replicas over one real database (a SQLite file, and
PostgreSQL), the Slack bot on real HTTP servers, the fake Slack on 127.0.0.1. One replica is a process of its
own that is killed (kill -9) while it answers; the other finishes its question in the same thread."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_slack import FakeSlack
from tests.support.replica import claim_store, dying_replica
from tests.support.slack_events import SlackSender
from tests.support.slack_world import (
    SIGNING_SECRET,
    Replica,
    build_world,
    replica_worlds,
    running_bot,
    survivor_world,
)
from threadwise.chat.handover import INTERRUPTED
from threadwise.db.claims import ClaimStore
from threadwise.db.conversations import ProcessedEventRow
from threadwise.index.store import EvidenceIndex

LAPTOP = "<@UBOT> how do I request a new laptop?"


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack(users={"U1": {}}) as fake:
        yield fake


def _mention(ts: str, user: str = "U1") -> dict[str, Any]:
    return {"type": "app_mention", "user": user, "text": LAPTOP, "ts": ts, "channel": "C1", "event_ts": ts}


def _answers(slack: FakeSlack, thread_ts: str) -> list[dict[str, Any]]:
    """The bot's answers in the thread (messages with an Explain button)."""
    return [m for m in slack.bot_messages("C1", thread_ts) if "explain" in json.dumps(m.get("blocks", []))]


def test_claims_are_renewed_finished_and_taken_over_once(database_url: str) -> None:
    a, b, c = claim_store(database_url), claim_store(database_url), claim_store(database_url)
    assert a.claim("slack:T:C:1", "replica-a", 0.5, {"text": "q1"})
    assert not b.claim("slack:T:C:1", "replica-b", 30, {"text": "q1"})  # answered once
    assert a.claim("slack:T:C:2", "replica-a", 0.5, {"text": "q2"})
    a.finish("slack:T:C:2")
    assert b.orphans("slack:") == []  # live, or answered
    time.sleep(0.6)  # replica a stops renewing: its open claim runs out
    [orphan] = b.orphans("slack:")
    assert (orphan.key, orphan.holder, orphan.payload) == ("slack:T:C:1", "replica-a", {"text": "q1"})
    assert c.orphans("teams:") == []
    taken = [b.take_over(orphan, "replica-b", 30), c.take_over(orphan, "replica-c", 30)]
    assert [t is not None for t in taken] == [True, False]  # one replica adopts it
    assert taken[0] is not None and taken[0].attempts == 2
    assert a.renew("replica-a", 30) == 0 and b.renew("replica-b", 30) == 1  # it is b's to renew now
    assert c.orphans("slack:") == []


def test_the_same_event_sent_to_both_replicas_is_answered_once(
    tmp_path: Path, database_url: str, index: EvidenceIndex, slack: FakeSlack
) -> None:
    worlds = replica_worlds(tmp_path, index, database_url, "replica-a", "replica-b")
    with running_bot(worlds[0], slack) as a, running_bot(worlds[1], slack) as b:
        stamps = [f"1700000100.{n:06d}" for n in range(6)]
        sends = [
            threading.Thread(
                target=run.send.event, args=(_mention(ts, user=f"U{n}"),), kwargs={"event_id": f"Ev{ts}"}
            )
            for n, ts in enumerate(stamps)
            for run in (a, b)
        ]
        for t in sends:
            t.start()
        for t in sends:
            t.join()
        slack.wait_for(lambda: all(_answers(slack, ts) for ts in stamps), timeout=60)
        a.bot.wait_idle()
        b.bot.wait_idle()
    assert [len(_answers(slack, ts)) for ts in stamps] == [1] * 6
    assert len(slack.calls_to("chat.postMessage")) == 6  # one placeholder each, then edited into the answer
    store = claim_store(database_url)
    assert store.orphans("slack:") == [] and store.renew("replica-a", 30) + store.renew("replica-b", 30) == 0


def test_a_replica_killed_while_answering_is_relieved_by_the_other(
    tmp_path: Path, database_url: str, index: EvidenceIndex, slack: FakeSlack
) -> None:
    ts = "1700000200.000001"
    with dying_replica(tmp_path / "dying", database_url, slack.api_url) as url:
        sender = SlackSender(url=url, signing_secret=SIGNING_SECRET, team=slack.team_id)
        assert sender.event(_mention(ts)).status == 200
        store = claim_store(database_url)
        key = f"slack:{slack.team_id}:C1:{ts}"
        slack.wait_for(lambda: _payload(store, key).get("placeholder_ts"))  # noted: then kill -9 mid-answer
    [placeholder] = slack.calls_to("chat.postMessage")
    assert _answers(slack, ts) == []

    survivor = survivor_world(tmp_path / "survivor", index, database_url)
    with running_bot(survivor, slack) as run:
        slack.wait_for(lambda: _answers(slack, ts))
        run.bot.wait_idle()
    [answer] = _answers(slack, ts)
    assert "IT portal" in json.dumps(answer["blocks"])
    assert answer["ts"] == placeholder.response["ts"]  # the placeholder the user saw became the answer
    assert slack.calls_to("chat.postMessage") == []  # since the survivor started: the answer is an edit
    assert store.orphans("slack:") == []
    [turn] = survivor.conversations.history(survivor.store.conversations()[0][1])
    assert turn.question.endswith("new laptop?")


def test_a_placeholder_posted_by_a_replica_that_died_before_recording_it_becomes_the_answer(
    tmp_path: Path, index: EvidenceIndex, slack: FakeSlack
) -> None:
    url = f"sqlite:///{tmp_path / 'shared.sqlite'}"
    ts = "1700000250.000001"
    held = slack.hold("chat.postMessage")  # the placeholder is posted; the replica never hears its ts
    try:
        with dying_replica(tmp_path / "dying", url, slack.api_url) as replica_url:
            sender = SlackSender(url=replica_url, signing_secret=SIGNING_SECRET, team=slack.team_id)
            assert sender.event(_mention(ts)).status == 200
            slack.wait_for(lambda: slack.calls_to("chat.postMessage"))  # then kill -9
    finally:
        held.set()
    [placeholder] = slack.bot_messages("C1", ts)
    payload = _payload(claim_store(url), f"slack:{slack.team_id}:C1:{ts}")
    assert payload["text"].endswith("new laptop?") and not payload.get("placeholder_ts")  # never recorded
    survivor = survivor_world(tmp_path / "survivor", index, url)
    with running_bot(survivor, slack) as run:
        slack.wait_for(lambda: _answers(slack, ts))
        run.bot.wait_idle()
    assert [m["ts"] for m in slack.bot_messages("C1", ts)] == [placeholder["ts"]]  # no "Looking…" left behind
    assert _answers(slack, ts)[0]["ts"] == placeholder["ts"] and slack.calls_to("chat.postMessage") == []


def _payload(store: ClaimStore, key: str) -> dict[str, Any]:
    """What the claim `key` keeps for another replica ({} while there is no such claim)."""
    with store._sessions() as s:
        row = s.get(ProcessedEventRow, key)
        return dict(row.payload or {}) if row is not None else {}


def test_a_question_that_outlived_its_replicas_gets_told_to_ask_again(
    tmp_path: Path, index: EvidenceIndex, slack: FakeSlack
) -> None:
    """Two replicas died on it already (or it is too old): the thread hears it was interrupted, not silence."""
    url = f"sqlite:///{tmp_path / 'shared.sqlite'}"
    store = claim_store(url)
    payload: dict[str, Any] = {"team": slack.team_id, "channel": "C1", "thread_ts": "1700000300.000001"}
    payload |= {"user": "U1", "text": "how do I request a new laptop?", "ts": "1700000300.000001"}
    assert store.claim(f"slack:{slack.team_id}:C1:1700000300.000001", "first", 0.0, payload)
    orphan = store.orphans("slack:")[0]
    for holder in ("second", "third"):
        taken = store.take_over(orphan, holder, 0.0)
        assert taken is not None
    old = dict(payload, thread_ts="1700000300.000002", ts="1700000300.000002")
    assert claim_store(url).claim(f"slack:{slack.team_id}:C1:1700000300.000002", "gone", 0.0, old)
    survivor = build_world(tmp_path, index=index, database_url=url, replica=Replica("survivor", sweep_s=0.2))
    assert survivor.conversations.claims is not None
    survivor.conversations.claims.max_age = timedelta(0)  # the second question counts as too old
    with running_bot(survivor, slack):
        slack.wait_for(lambda: len(slack.calls_to("chat.postMessage")) == 2)
    told = [c.params["text"] for c in slack.calls_to("chat.postMessage")]
    assert all(INTERRUPTED in t for t in told)
    assert store.orphans("slack:") == []


def test_an_event_acknowledged_by_a_replica_that_died_before_claiming_it_is_replayed(
    tmp_path: Path, index: EvidenceIndex, slack: FakeSlack
) -> None:
    """Slack does not re-send an acknowledged event: the record kept as it arrived is replayed by a survivor."""
    from slack_sdk.signature import SignatureVerifier

    url = f"sqlite:///{tmp_path / 'shared.sqlite'}"
    ts = "1700000400.000001"
    raw = json.dumps(
        {"type": "event_callback", "team_id": slack.team_id, "api_app_id": "A0APP", "event_id": "EvLOST"}
        | {"event": _mention(ts), "event_time": int(time.time())}
    )
    stamp = str(int(time.time()))
    headers = {"content-type": "application/json", "x-slack-request-timestamp": stamp}
    signature = SignatureVerifier(SIGNING_SECRET).generate_signature(timestamp=stamp, body=raw)
    headers["x-slack-signature"] = str(signature)
    # what the dead replica's HTTP server kept before it acknowledged (its listener never ran)
    assert claim_store(url).claim(
        "slack:inbox:EvLOST", "dead:received", 0.0, {"raw": raw, "headers": headers}
    )
    survivor = build_world(tmp_path, index=index, database_url=url, replica=Replica("survivor", sweep_s=0.2))
    with running_bot(survivor, slack) as run:
        slack.wait_for(lambda: _answers(slack, ts))
        run.bot.wait_idle()
        sender = run.send
        assert sender.event(_mention(ts), event_id="EvLOST", retry_num=1).status == 200  # a late retry
        run.bot.wait_idle()
    assert len(_answers(slack, ts)) == 1
    assert claim_store(url).orphans("slack:") == []


def test_an_auto_channels_question_sent_to_both_replicas_is_answered_once(
    tmp_path: Path, index: EvidenceIndex, slack: FakeSlack
) -> None:
    """Auto mode (issue 30): a top-level question without a mention, delivered to two replicas sharing one
    database, gets one answer in its thread; a statement beside it gets nothing from either."""
    url = f"sqlite:///{tmp_path / 'shared.sqlite'}"
    worlds = replica_worlds(tmp_path, index, url, "replica-a", "replica-b")
    worlds[0].admin.channels.set_auto("C1", True, platform="slack", by="UADMIN")
    asked, said = "1700000300.000001", "1700000300.000002"

    def message(ts: str, text: str) -> dict[str, Any]:
        return {
            "type": "message",
            "channel": "C1",
            "channel_type": "channel",
            "user": "U1",
            "text": text,
            "ts": ts,
            "event_ts": ts,
        }

    with running_bot(worlds[0], slack) as a, running_bot(worlds[1], slack) as b:
        sends = [
            threading.Thread(target=run.send.event, args=(event,), kwargs={"event_id": f"Ev{event['ts']}"})
            for event in (
                message(asked, "How do I request a new laptop?"),
                message(said, "Thanks, all sorted."),
            )
            for run in (a, b)
        ]
        for t in sends:
            t.start()
        for t in sends:
            t.join()
        slack.wait_for(lambda: _answers(slack, asked), timeout=60)
        a.bot.wait_idle()
        b.bot.wait_idle()
    assert len(_answers(slack, asked)) == 1
    assert slack.bot_messages("C1", said) == []
