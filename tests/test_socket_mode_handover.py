"""Slack in Socket Mode across replicas: the real Bolt app behind the real slack_sdk Socket Mode client (what
`serve` connects), over a real WebSocket to a fake Socket Mode endpoint on 127.0.0.1, over one shared database.
An event is kept in the database before it is acknowledged, so one that a replica acknowledged and then died
on is replayed by another replica and answered once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from slack_sdk.socket_mode.request import SocketModeRequest

from tests.support.fake_slack import FakeSlack
from tests.support.fake_socket_mode import FakeSocketMode
from tests.support.replica import claim_store
from tests.support.slack_events import event_body
from tests.support.slack_world import Replica, World, build_world
from threadwise.chat.handover import ClaimKeeper
from threadwise.db.claims import ClaimStore
from threadwise.index.store import EvidenceIndex
from threadwise.slack.app import SlackBot
from threadwise.slack.handover import keep_socket_event
from threadwise.slack.question import PLATFORM
from threadwise.slack.settings import SlackSettings
from threadwise.slack.socket_mode import socket_mode_handler

LAPTOP = "<@UBOT> how do I request a new laptop?"


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack(users={"U1": {}}) as fake:
        yield fake


@pytest.fixture
def endpoint(slack: FakeSlack) -> Iterator[FakeSocketMode]:
    with FakeSocketMode() as fake:
        slack.socket_url = fake.url  # what apps.connections.open hands out
        yield fake


def _mention(slack: FakeSlack, ts: str, event_id: str) -> dict[str, Any]:
    event = {"type": "app_mention", "user": "U1", "text": LAPTOP, "ts": ts, "channel": "C1", "event_ts": ts}
    return event_body(event, team=slack.team_id, event_id=event_id)


def _answers(slack: FakeSlack, thread_ts: str) -> list[dict[str, Any]]:
    return [m for m in slack.bot_messages("C1", thread_ts) if "explain" in json.dumps(m.get("blocks", []))]


def _kept(store: ClaimStore, event_id: str) -> dict[str, Any] | None:
    """The inbox record of an event: whether it is open (not yet handled), or None when there is none."""
    from threadwise.db.conversations import ProcessedEventRow

    with store._sessions() as s:
        row = s.get(ProcessedEventRow, f"{PLATFORM}:inbox:{event_id}")
        return None if row is None else {"open": row.lease_until is not None}


@dataclass
class SocketReplica:
    bot: SlackBot
    endpoint: FakeSocketMode


@contextmanager
def socket_replica(world: World, slack: FakeSlack, endpoint: FakeSocketMode) -> Iterator[SocketReplica]:
    """The Slack bot for `world` connected in Socket Mode as `serve` connects it."""
    settings = SlackSettings(bot_token=slack.token, app_token=slack.app_token, api_url=slack.api_url)
    bot = SlackBot(conversations=world.conversations, admin=world.admin, settings=settings)
    bot.learn_installation()
    handler = socket_mode_handler(bot)
    handler.connect()
    try:
        yield SocketReplica(bot, endpoint)
    finally:
        handler.close()
        bot.wait_idle(timeout=10)
        bot.close()


def test_socket_mode_keeps_each_event_before_acknowledging_it(
    tmp_path: Path, database_url: str, index: EvidenceIndex, slack: FakeSlack, endpoint: FakeSocketMode
) -> None:
    store = claim_store(database_url)
    kept_when_acknowledged: list[dict[str, Any] | None] = []
    # the answer's post waits for the ack to be seen, so the handling cannot finish first on a busy machine
    answered = slack.hold("chat.postMessage")

    def on_ack(envelope: str) -> None:
        kept_when_acknowledged.append(_kept(store, "EvSOCKET1"))
        answered.set()

    endpoint.on_ack = on_ack
    world = build_world(tmp_path, index=index, database_url=database_url, replica=Replica("replica-a"))
    ts = "1700000500.000001"
    with socket_replica(world, slack, endpoint) as run:
        envelope = endpoint.push(_mention(slack, ts, "EvSOCKET1"))
        slack.wait_for(lambda: _answers(slack, ts))
        run.bot.wait_idle()
    assert endpoint.acks == [envelope]
    assert kept_when_acknowledged == [{"open": True}]  # in the database before Slack heard the ack
    assert _kept(store, "EvSOCKET1") == {"open": False}  # handled: no replica replays it
    assert len(_answers(slack, ts)) == 1 and store.orphans("slack:") == []


def test_an_event_acknowledged_in_socket_mode_by_a_replica_that_died_is_replayed_once(
    tmp_path: Path, index: EvidenceIndex, slack: FakeSlack, endpoint: FakeSocketMode
) -> None:
    url = f"sqlite:///{tmp_path / 'shared.sqlite'}"
    ts = "1700000600.000001"
    body = _mention(slack, ts, "EvSOCKETLOST")
    request = SocketModeRequest.from_dict({"type": "events_api", "envelope_id": "e-1", "payload": body})
    assert request is not None
    # what the dead replica's handler kept before it acknowledged (its listener never ran, nor will)
    dead = ClaimKeeper(store=claim_store(url), replica="dead-replica", ttl_s=0.0)
    keep_socket_event(dead, PLATFORM, request.payload)
    dead.stop()
    survivor = build_world(tmp_path, index=index, database_url=url, replica=Replica("survivor", sweep_s=0.2))
    with socket_replica(survivor, slack, endpoint) as run:
        slack.wait_for(lambda: _answers(slack, ts))
        run.bot.wait_idle()
        late = endpoint.push(body, retry_attempt=1)  # Slack's retry of an event it never saw acknowledged
        endpoint.wait_for(lambda: late in endpoint.acks)
        run.bot.wait_idle()
    assert len(_answers(slack, ts)) == 1
    assert claim_store(url).orphans("slack:") == []
