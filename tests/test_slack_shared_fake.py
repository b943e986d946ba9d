"""The Slack bot end to end against the independent fake in ../shared/fakes/fake_slack.py (written from Slack's
documentation by another hand): its Web API is what the bot's WebClient talks to, and its helpers play Slack's
side, posting signed events, button presses and slash commands to the bot's real HTTP endpoint.
Skipped, with the reason, where ../shared/fakes is absent.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import pytest

from tests.support.slack_world import SIGNING_SECRET, World
from threadwise.reports.service import GapReports
from threadwise.slack.app import SlackBot
from threadwise.slack.http_server import HttpServer
from threadwise.slack.question import EXTERNAL
from threadwise.slack.settings import SlackSettings

TOKEN = "xoxb-shared-fake"
LAPTOP = "how do I request a new laptop?"


@dataclass
class Live:
    fake: ModuleType  # the shared fake_slack module (its helpers)
    slack: Any  # its FakeSlackClient
    api_url: str
    url: str  # the bot's /slack/events
    bot: SlackBot


@contextmanager
def live_bot(
    fake: ModuleType, world: World, gap_reports: GapReports | None = None, **settings: Any
) -> Iterator[Live]:
    """The shared fake Slack, and the bot on a real HTTP server talking to it (start-up as `serve` does it)."""
    server, api_url = fake.start(tokens=[TOKEN])
    config = SlackSettings(bot_token=TOKEN, signing_secret=SIGNING_SECRET, api_url=api_url, **settings)
    bot = SlackBot(
        conversations=world.conversations, admin=world.admin, settings=config, gap_reports=gap_reports
    )
    bot.learn_installation()
    http = HttpServer(bot, host="127.0.0.1", port=0)
    http.start()
    try:
        yield Live(fake, fake.FakeSlackClient(api_url), api_url, http.url, bot)
    finally:
        http.stop()
        bot.wait_idle(timeout=10)
        bot.close()
        server.shutdown()


@pytest.fixture
def live(shared_fakes: Callable[[str], ModuleType], world: World) -> Iterator[Live]:
    with live_bot(shared_fakes("fake_slack"), world) as running:
        yield running


def wait_for(found: Callable[[], Any], timeout: float = 15.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if result := found():
            return result
        time.sleep(0.05)
    raise AssertionError("Slack never showed it")


def in_thread(live: Live, channel: str, ts: str, words: str) -> list[dict[str, Any]]:
    return [m for m in live.slack.messages(channel, ts) if words in live.fake.message_text(m)]


def button(live: Live, message: dict[str, Any], action_id: str, side: str = "") -> dict[str, Any]:
    buttons = live.fake.find_buttons(message.get("blocks"))
    return next(
        b for b in buttons if b["action_id"] == action_id and (not side or b.get("_feedback") == side)
    )


def ask(live: Live, channel: str = "C0GENERAL") -> tuple[str, dict[str, Any]]:
    """A mention, acknowledged within Slack's 3 s; its ts and the answer in its thread."""
    event = live.fake.app_mention_event(LAPTOP, channel=channel)
    reply = live.fake.post_event(live.url, live.fake.event_envelope(event), SIGNING_SECRET)
    assert reply.status == 200 and reply.seconds < 3.0, reply
    answer = wait_for(
        lambda: [m for m in in_thread(live, channel, event["ts"], "IT portal") if m.get("blocks")]
    )
    live.bot.wait_idle()
    return event["ts"], answer[-1]


def test_start_up_learns_the_workspace_from_auth_test(live: Live) -> None:
    assert live.slack.calls("auth.test")
    assert (live.bot.installation.team, live.bot.installation.app) == (live.fake.TEAM_ID, live.fake.APP_ID)


def test_a_mention_is_answered_in_its_thread_and_explain_posts_the_attribution(
    live: Live, world: World
) -> None:
    ts, answer = ask(live)
    explain = button(live, answer, "explain")
    pressed = live.fake.press_button(live.url, SIGNING_SECRET, answer, explain, fake_slack_url=live.api_url)
    assert pressed.status == 200, pressed
    wait_for(lambda: in_thread(live, "C0GENERAL", ts, "Why this answer"))
    live.bot.wait_idle()
    assert world.store.explanation(int(explain["value"])) is not None


def test_a_thumbs_up_is_recorded(live: Live, world: World) -> None:
    _, answer = ask(live)
    up = button(live, answer, "feedback", "positive_button")
    assert (
        live.fake.press_button(live.url, SIGNING_SECRET, answer, up, fake_slack_url=live.api_url).status
        == 200
    )
    live.bot.wait_idle()
    turn = int(button(live, answer, "explain")["value"])
    assert world.store.votes(turn) == {"U0ALICE": "up"}
    assert any(
        "👍" in e["text"] or "👍" in json.dumps(e.get("blocks"))
        for e in live.slack.ephemerals(user="U0ALICE")
    )


def test_the_slash_command_answers(live: Live) -> None:
    form = live.fake.slash_command_form(text="help", fake_slack_url=live.api_url)
    reply = live.fake.post_slash_command(live.url, form, SIGNING_SECRET)
    assert reply.status == 200, reply
    live.bot.wait_idle()
    said = reply.body + json.dumps([c["params"] for c in live.slack.calls("response_url")])
    assert "Threadwise commands" in said


def connect_envelope(live: Live, channel: str) -> tuple[str, dict[str, Any]]:
    """An app_mention by a user of another organisation in a Slack Connect channel, as Slack delivers it to us."""
    event = live.fake.app_mention_event(LAPTOP, user="U0GUEST", channel=channel, team="T0OTHERORG")
    event.update(user_team="T0OTHERORG", source_team="T0OTHERORG")
    envelope = live.fake.event_envelope(event, team_id="T0OTHERORG")
    envelope["authorizations"][0]["team_id"] = live.fake.TEAM_ID  # the installation the event is for: ours
    envelope["is_ext_shared_channel"] = True
    return event["ts"], envelope


def test_a_slack_connect_user_of_another_organisation_is_refused(live: Live) -> None:
    ts, envelope = connect_envelope(live, "C0SHARED")
    assert live.fake.post_event(live.url, envelope, SIGNING_SECRET).status == 200
    wait_for(lambda: in_thread(live, "C0SHARED", ts, EXTERNAL))
    live.bot.wait_idle()
    assert not in_thread(live, "C0SHARED", ts, "IT portal")


def test_a_slack_connect_user_is_answered_when_let_in(
    shared_fakes: Callable[[str], ModuleType], world: World
) -> None:
    with live_bot(shared_fakes("fake_slack"), world, allow_external_users=True) as live:
        ts, envelope = connect_envelope(live, "C0SHARED")
        assert live.fake.post_event(live.url, envelope, SIGNING_SECRET).status == 200
        wait_for(lambda: in_thread(live, "C0SHARED", ts, "IT portal"))
