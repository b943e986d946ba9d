"""Slack's own documented payloads (tests/fixtures/slack/, sources in its SOURCES.md) driven, signed, through the
real HTTP endpoint into the real Bolt app: each is accepted and handled. Their ids are mapped onto the fake
workspace (and the question text onto one the wiki answers); every other field is Slack's.

Also: the hostile shapes are still refused with 400; a Slack Connect user of another organisation is refused
unless let in; clients that send half a request and wait are closed by the deadline while Slack is served.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import pytest

from tests.support.fake_slack import FakeSlack
from tests.support.slack_events import find_action
from tests.support.slack_world import ADMIN, Running, World, running_bot
from threadwise.slack.http_server import HttpLimits
from threadwise.slack.question import EXTERNAL, of_another_organisation

FIXTURES = Path(__file__).parent / "fixtures" / "slack"
LAPTOP = "how do I request a new laptop?"
_ts = iter(range(1, 10**6))


def new_ts() -> str:
    return f"1710000000.{next(_ts):06d}"


def fixture(name: str, ids: dict[str, str]) -> dict[str, Any]:
    """A stored Slack example with its ids (whole string values) mapped by `ids`."""

    def mapped(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: mapped(v) for k, v in value.items()}
        if isinstance(value, list):
            return [mapped(v) for v in value]
        return ids.get(value, value) if isinstance(value, str) else value

    result: dict[str, Any] = mapped(json.loads((FIXTURES / name).read_text()))
    return result


def ours(slack: FakeSlack, *fixture_ids: str) -> dict[str, str]:
    """Map a fixture's workspace, app and bot user ids onto the fake's."""
    ids = {"U0LAN0Z89": slack.bot_user_id, "W111": slack.bot_user_id}
    for fid in fixture_ids:
        ids[fid] = {"T": slack.team_id, "A": slack.app_id, "E": slack.enterprise_id}[fid[0]]
    return ids


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack(users={"U061F7AUR": {}, "U2147483697": {}, "U0CA5": {}, "W222": {}, ADMIN: {}}) as fake:
        yield fake


@pytest.fixture
def run(world: World, slack: FakeSlack) -> Iterator[Running]:
    with running_bot(world, slack) as running:
        yield running


def post_event(run: Running, body: dict[str, Any]) -> int:
    return run.send.post(json.dumps(body), content_type="application/json").status


def answer_in(run: Running, channel: str, thread_ts: str) -> dict[str, Any]:
    found = run.slack.wait_for(
        lambda: [
            m for m in run.slack.bot_messages(channel, thread_ts) if "explain" in json.dumps(m["blocks"])
        ]
    )
    run.bot.wait_idle()
    return dict(found[0])


def documented_mention(run: Running, *, channel: str = "C123ABC456") -> tuple[str, dict[str, Any]]:
    """Slack's app_mention example, asking the laptop question; its ts and the bot's answer."""
    body = fixture("events_app_mention.json", ours(run.slack, "T123ABC456", "A123ABC456"))
    ts = new_ts()
    body["event"].update(text=f"<@{run.slack.bot_user_id}> {LAPTOP}", ts=ts, event_ts=ts, channel=channel)
    assert post_event(run, body) == 200
    return ts, answer_in(run, channel, ts)


def documented_press(
    run: Running, name: str, answer: dict[str, Any], action_id: str, value: str | None = None, **ids: str
) -> int:
    """Slack's block_actions example `name`, as a press of our button `action_id` on `answer` in C123ABC456."""
    payload = fixture(name, ours(run.slack, *ids.values()))
    element, block_id = find_action(answer, action_id)
    payload["container"].update(
        message_ts=answer["ts"], channel_id="C123ABC456", thread_ts=answer["thread_ts"]
    )
    payload["channel"]["id"] = "C123ABC456"
    payload["message"] = answer
    payload["actions"][0].update(action_id=action_id, block_id=block_id, value=value or element["value"])
    return run.send.interaction(payload).status


# -- Slack's documented payloads, each through the endpoint ---------------------------------------------------


def test_documented_app_mention_is_answered_and_its_explain_press_posts_the_attribution(
    run: Running, world: World
) -> None:
    ts, answer = documented_mention(run)
    assert "IT portal" in json.dumps(answer["blocks"])
    # The documented block_actions payload carries "enterprise": null and "is_enterprise_install": false.
    assert (
        documented_press(run, "block_actions_message.json", answer, "explain", team="T3MDE", app="A0CA5")
        == 200
    )
    run.slack.wait_for(
        lambda: any(
            "Why this answer" in json.dumps(m["blocks"]) for m in run.slack.bot_messages("C123ABC456", ts)
        )
    )
    run.bot.wait_idle()
    turn = int(find_action(answer, "explain")[0]["value"])
    assert world.store.explanation(turn) is not None


def test_documented_direct_message_is_answered(run: Running) -> None:
    body = fixture("events_message_im.json", ours(run.slack, "T123ABC456", "A0PNCHHK2"))
    ts = new_ts()
    body["event"].update(text=LAPTOP, ts=ts, event_ts=ts)
    assert post_event(run, body) == 200
    assert "IT portal" in json.dumps(answer_in(run, "D024BE91L", ts)["blocks"])


def test_enterprise_grid_mention_and_vote_are_handled(world: World) -> None:
    with (
        FakeSlack(enterprise_id="E0GRID", users={"W222": {}}) as slack,
        running_bot(world, slack) as run,
    ):
        body = fixture(
            "events_app_mention_enterprise_grid.json", ours(slack, "T_INSTALLED", "E_INSTALLED", "A111")
        )
        ts = new_ts()
        body["event"].update(
            text=f"<@{slack.bot_user_id}> {LAPTOP}", ts=ts, event_ts=ts, channel="C123ABC456"
        )
        assert post_event(run, body) == 200
        answer = answer_in(run, "C123ABC456", ts)
        payload = fixture("block_actions_enterprise_grid.json", ours(slack, "T111", "E111", "A111"))
        _, block_id = find_action(answer, "feedback")
        payload["user"]["id"] = "W222"
        payload["container"].update(message_ts=answer["ts"], channel_id="C123ABC456", thread_ts=ts)
        payload["channel"]["id"] = "C123ABC456"
        payload["message"] = answer
        payload["actions"][0].update(action_id="feedback", block_id=block_id, value="up")
        assert run.send.interaction(payload).status == 200
        run.bot.wait_idle()
        turn = int(find_action(answer, "explain")[0]["value"])
        assert world.store.votes(turn) == {"W222": "up"}


def test_documented_app_home_press_is_acknowledged_and_ignored(run: Running) -> None:
    payload = fixture("block_actions_app_home.json", ours(run.slack, "T3MDE", "A0CA5"))
    assert run.send.interaction(payload).status == 200  # a button we never drew: acknowledged, nothing done
    run.bot.wait_idle()
    assert [c.method for c in run.slack.calls if c.method != "auth.test"] == []  # Bolt's own check aside


def test_documented_view_submission_stores_the_comment(run: Running, world: World) -> None:
    _, answer = documented_mention(run)
    assert (
        documented_press(
            run, "block_actions_message.json", answer, "feedback", "down", team="T3MDE", app="A0CA5"
        )
        == 200
    )
    run.bot.wait_idle()
    [opened] = run.slack.calls_to("views.open")
    payload = fixture("view_submission.json", ours(run.slack, "T3MDE", "A0CA5"))
    modal = opened.params["view"]
    payload["view"].update(
        blocks=modal["blocks"],
        private_metadata=modal["private_metadata"],
        callback_id=modal["callback_id"],
        state={"values": {"comment": {"text": {"type": "plain_text_input", "value": "Outdated page"}}}},
    )
    assert run.send.interaction(payload).status == 200
    run.bot.wait_idle()
    assert world.conversations.feedback_summary()["latest_down"][0]["comment"] == "Outdated page"


def test_documented_slash_command_is_answered(run: Running) -> None:
    form = fixture("slash_command.json", ours(run.slack, "T0001", "A123456"))
    (
        form.pop("enterprise_id"),
        form.pop("enterprise_name"),
    )  # the example's workspace is in a Grid; ours is not
    form.update(command="/threadwise", text="help", response_url=run.slack.response_url())
    reply = run.send.post(urlencode(form), content_type="application/x-www-form-urlencoded")
    assert reply.status == 200
    run.bot.wait_idle()
    said = [reply.body, *(json.dumps(c.params) for c in run.slack.calls_to("response_url"))]
    assert "Threadwise commands" in "".join(said)


# -- Slack Connect ------------------------------------------------------------------------------------------


def connect_mention(run: Running) -> str:
    """Slack's shape of a Slack Connect app_mention: the envelope's team_id the other organisation's, the
    installation in `authorizations`, `is_ext_shared_channel: true`, the author's `user_team` theirs."""
    body = fixture("events_app_mention_slack_connect.json", ours(run.slack, "T_INSTALLED", "A111"))
    ts = new_ts()
    body["authorizations"][0]["enterprise_id"] = None  # installed in a plain workspace
    body["event"].update(text=f"<@{run.slack.bot_user_id}> {LAPTOP}", ts=ts, event_ts=ts, channel="CSHARED")
    assert post_event(run, body) == 200
    return ts


def test_a_slack_connect_user_of_another_organisation_is_refused(run: Running) -> None:
    ts = connect_mention(run)
    posted = run.slack.wait_for(lambda: run.slack.bot_messages("CSHARED", ts))
    run.bot.wait_idle()
    assert EXTERNAL in json.dumps(posted) and "IT portal" not in json.dumps(
        run.slack.bot_messages("CSHARED", ts)
    )


def test_a_slack_connect_user_is_answered_when_let_in(world: World, slack: FakeSlack) -> None:
    with running_bot(world, slack, allow_external_users=True) as run:
        ts = connect_mention(run)
        assert "IT portal" in json.dumps(answer_in(run, "CSHARED", ts)["blocks"])


@pytest.mark.parametrize(
    ("author", "ext_shared", "home", "external"),
    [
        ("T_SOURCE", True, ("T_INSTALLED", ""), True),  # another organisation's workspace
        ("E_SOURCE", True, ("T_INSTALLED", ""), True),  # a Grid organisation names itself in user_team
        (
            "T_INSTALLED",
            True,
            ("", ""),
            False,
        ),  # our own user in a Connect channel (home from authorizations)
        ("E_INSTALLED", True, ("T_INSTALLED", "E_INSTALLED"), False),  # our own Grid organisation
        ("T_SISTER", False, ("T_INSTALLED", "E_INSTALLED"), False),  # a channel shared inside our Grid org
        ("", True, ("T_INSTALLED", ""), False),  # no author team: nobody to call external
    ],
)
def test_who_is_of_another_organisation(
    author: str, ext_shared: bool, home: tuple[str, str], external: bool
) -> None:
    body = fixture("events_app_mention_slack_connect.json", {}) | {"is_ext_shared_channel": ext_shared}
    event = {**body["event"], "user_team": author, "team": author}
    assert of_another_organisation(body, event, home=home) is external


# -- hostile shapes ------------------------------------------------------------------------------------------


def test_hostile_shapes_are_still_refused(run: Running) -> None:
    event = fixture("events_app_mention.json", ours(run.slack, "T123ABC456", "A123ABC456")) | {"event": None}
    assert post_event(run, event) == 400
    press = fixture("block_actions_message.json", ours(run.slack, "T3MDE", "A0CA5"))
    assert run.send.interaction(press | {"actions": []}).status == 400
    assert (
        run.send.interaction(press | {"enterprise": "E1"}).status == 400
    )  # a string where Slack has an object
    submitted = fixture("view_submission.json", ours(run.slack, "T3MDE", "A0CA5"))
    assert run.send.interaction(submitted | {"view": "V0PKB1ZFV"}).status == 400
    run.bot.wait_idle()
    assert [c.method for c in run.slack.calls if c.method != "auth.test"] == []


# -- half-sent requests ----------------------------------------------------------------------------------------


def test_idle_half_sent_requests_are_closed_by_the_deadline_while_slack_is_served(
    world: World, slack: FakeSlack
) -> None:
    limits = HttpLimits(header_timeout=2.0, body_timeout=2.0, max_connections=20)
    with running_bot(world, slack, limits=limits) as run:
        parts = urlsplit(run.send.url)
        head = (
            f"POST {parts.path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "Content-Length: 500000\r\n\r\n{"
        ).encode()
        idle = []
        opened = time.monotonic()
        for _ in range(30):  # more than the connection limit
            sock = socket.create_connection((parts.hostname, parts.port), timeout=5)
            sock.sendall(head)
            idle.append(sock)
        try:
            started = time.monotonic()
            ts = new_ts()
            event = {
                "type": "app_mention",
                "user": "U061F7AUR",
                "text": f"<@UBOT> {LAPTOP}",
                "ts": ts,
                "channel": "C1",
            }
            assert run.send.event(event).status == 200
            assert time.monotonic() - started < 3.0  # acknowledged within Slack's 3 s
            closed_at = [_closed(sock) - opened for sock in idle]  # each read as soon as it can be: a bound
            assert max(closed_at) < limits.body_timeout + 1.5, closed_at  # none held past the deadline
            assert "IT portal" in json.dumps(answer_in(run, "C1", ts)["blocks"])
        finally:
            for sock in idle:
                sock.close()


def _closed(sock: socket.socket) -> float:
    """When the server closed `sock` (time.monotonic()), reading whatever it answered first."""
    while sock.recv(4096):
        pass
    return time.monotonic()
