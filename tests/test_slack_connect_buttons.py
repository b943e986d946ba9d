"""Buttons that ask a question (Try again, suggested follow-ups) under answers in a Slack Connect channel: a
presser of another organisation (their `user.team_id`) is refused privately with the mention's polite text and
nothing is asked, unless THREADWISE_SLACK_ALLOW_EXTERNAL_USERS lets them in; our own users press as before.
Slack's documented payloads (tests/fixtures/slack/), signed, through the real endpoint into the real Bolt app.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_openai import FakeOpenAI, echo_with_follow_ups
from tests.support.fake_slack import FakeSlack
from tests.support.llm import chat_for
from tests.support.slack_events import find_action
from tests.support.slack_world import Running, World, build_world, running_bot
from tests.test_slack_vendor_shapes import LAPTOP, fixture, new_ts, ours
from threadwise.core.answer.llm import LLMAnswerer
from threadwise.index.store import EvidenceIndex
from threadwise.slack.question import EXTERNAL

CHANNEL, ASKER, PRESSER, OTHER_ORG = "CSHARED", "U061F7AUR", "U0CA5", "T_SOURCE"


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack(users={ASKER: {}, PRESSER: {}}) as fake:
        yield fake


@pytest.fixture
def world(tmp_path: Path, index: EvidenceIndex) -> Iterator[World]:
    """The first question fails (its answer offers Try again); later answers suggest follow-ups."""
    with FakeOpenAI(respond=echo_with_follow_ups) as llm:
        llm.fail(500, times=2)  # the call and its one retry
        yield build_world(tmp_path, index=index, answerer=LLMAnswerer(chat=chat_for(llm), follow_ups=3))


def ask_in_connect_channel(run: Running) -> dict[str, Any]:
    """Slack's Slack Connect app_mention (`is_ext_shared_channel: true`), asked by a user of ours; the reply."""
    body = fixture("events_app_mention_slack_connect.json", ours(run.slack, "T_INSTALLED", "A111"))
    body["authorizations"][0]["enterprise_id"] = None  # installed in a plain workspace
    ts, team = new_ts(), run.slack.team_id
    body["event_id"] = f"Ev{ts}"
    body["event"].update(
        text=f"<@{run.slack.bot_user_id}> {LAPTOP}", ts=ts, event_ts=ts, channel=CHANNEL, user=ASKER
    )
    body["event"].update(team=team, user_team=team, source_team=team)
    assert run.send.post(json.dumps(body), content_type="application/json").status == 200
    found = run.slack.wait_for(lambda: [m for m in run.slack.bot_messages(CHANNEL, ts) if _answer(m)])
    run.bot.wait_idle()
    return dict(found[0])


def press(run: Running, message: dict[str, Any], action_id: str, *, team: str) -> None:
    """Slack's block_actions example as a press of `action_id` on `message` by PRESSER of `team`."""
    payload = fixture("block_actions_message.json", ours(run.slack, "T3MDE", "A0CA5"))
    element, block_id = find_action(message, action_id)
    payload["user"]["team_id"] = team
    payload["container"].update(message_ts=message["ts"], channel_id=CHANNEL, thread_ts=message["thread_ts"])
    payload["channel"]["id"] = CHANNEL
    payload["message"] = message
    payload["actions"][0].update(action_id=action_id, block_id=block_id, value=element["value"])
    assert run.send.interaction(payload).status == 200
    run.bot.wait_idle()


def _buttons(message: dict[str, Any]) -> set[str]:
    """The action ids of a message's buttons; an answer (not a placeholder) has Explain or Try again."""
    found = {e.get("action_id") for b in message.get("blocks", []) for e in b.get("elements", [])}
    return {a for a in found if isinstance(a, str)}


def _answer(message: dict[str, Any]) -> bool:
    return bool(_buttons(message) & {"explain", "retry"})


def threads(run: Running, *messages: dict[str, Any]) -> str:
    return json.dumps([run.slack.bot_messages(CHANNEL, m["thread_ts"]) for m in messages])


def answered_both(run: Running, failed: dict[str, Any], answer: dict[str, Any]) -> None:
    """Try again replaced the failure with an answer; the follow-up was asked and answered in its thread."""
    run.slack.wait_for(lambda: "explain" in _buttons(run.slack.message(CHANNEL, failed["ts"]) or {}))
    run.slack.wait_for(
        lambda: len([m for m in run.slack.bot_messages(CHANNEL, answer["thread_ts"]) if _answer(m)]) == 2
    )
    run.bot.wait_idle()


def test_another_organisations_press_asks_nothing_and_ours_works(world: World, slack: FakeSlack) -> None:
    with running_bot(world, slack) as run:
        failed, answer = ask_in_connect_channel(run), ask_in_connect_channel(run)
        assert "retry" in _buttons(failed) and "follow_up_1" in _buttons(answer)
        before = threads(run, failed, answer)

        press(run, failed, "retry", team=OTHER_ORG)
        press(run, answer, "follow_up_1", team=OTHER_ORG)
        refusals = run.slack.ephemerals(user=PRESSER, channel=CHANNEL)
        assert [EXTERNAL in json.dumps(r) for r in refusals] == [True, True]
        assert threads(run, failed, answer) == before  # nothing asked, nothing answered, nothing shown

        press(run, failed, "retry", team=slack.team_id)  # a user of our own workspace: as before
        press(run, answer, "follow_up_1", team=slack.team_id)
        answered_both(run, failed, answer)
        assert len(run.slack.ephemerals(user=PRESSER)) == 2


def test_another_organisations_press_is_answered_when_let_in(world: World, slack: FakeSlack) -> None:
    with running_bot(world, slack, allow_external_users=True) as run:
        failed, answer = ask_in_connect_channel(run), ask_in_connect_channel(run)
        press(run, failed, "retry", team=OTHER_ORG)
        press(run, answer, "follow_up_1", team=OTHER_ORG)
        answered_both(run, failed, answer)
        assert EXTERNAL not in json.dumps(run.slack.ephemerals())
