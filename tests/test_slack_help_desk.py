"""Help-desk channels in Slack (issue 30): auto answers, private first, and calling the channel's experts in,
through the real Bolt app over HTTP against the local fake Slack, and the private flow against the independent
shared fake too (../shared/fakes/fake_slack.py)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pytest

from tests.support.fake_slack import FakeSlack
from tests.support.slack_driver import (
    WORKSPACE_ADMIN,
    answers,
    has_action,
    mention,
    message,
    new_ts,
    press,
    text_of,
    vote,
    wait_answers,
)
from tests.support.slack_events import find_action, new_trigger_id
from tests.support.slack_world import ADMIN, SIGNING_SECRET, Running, World, running_bot
from tests.test_slack_shared_fake import live_bot, wait_for
from threadwise.chat.help_desk import NOT_FOUND_PRIVATELY
from threadwise.db.channel_modes import Expert
from threadwise.slack.help_desk import ESCALATE_ACTION, KEEP_ACTION, RESOLVE_ACTION, SHARE_ACTION

LAPTOP = "how do I request a new laptop?"
FRANCE = "What is the capital of France?"
EXPERTS = [Expert("user", "U7ANA", "ana"), Expert("group", "S0HELP", "help-desk")]


@pytest.fixture
def run(world: World) -> Iterator[Running]:
    users = {"U1": {}, "U2": {}, "U7ANA": {}, WORKSPACE_ADMIN: {"is_admin": True}, ADMIN: {}}
    with FakeSlack(users=users) as slack, running_bot(world, slack) as running:
        yield running


def modes(world: World, channel: str = "C1", *, auto: bool = False, private: bool = False) -> None:
    world.admin.channels.set_auto(channel, auto, platform="slack", by=ADMIN)
    world.admin.channels.set_private(channel, private, platform="slack", by=ADMIN)


def experts(world: World, channel: str = "C1") -> None:
    world.admin.channels.set_experts(channel, EXPERTS, platform="slack", by=ADMIN)


def public(run: Running, channel: str, ts: str) -> list[dict[str, Any]]:
    """What the bot posted in the thread, for everyone."""
    return run.slack.bot_messages(channel, ts)


def ephemerals_in(run: Running, ts: str, user: str = "U1") -> list[dict[str, Any]]:
    return [e for e in run.slack.ephemerals(user=user) if e.get("thread_ts") == ts]


def press_ephemeral(
    run: Running, ephemeral: dict[str, Any], action_id: str, *, user: str = "U1", thread_ts: str | None = None
) -> None:
    """A press on an ephemeral message as Slack sends it: the container says is_ephemeral and there is no
    `message` in the payload; the response_url is the fake's."""
    element, block_id = find_action(ephemeral, action_id)
    payload = {
        "type": "block_actions",
        "team": {"id": run.slack.team_id, "domain": "fake"},
        "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": run.slack.team_id},
        "api_app_id": "A0APP",
        "token": "legacy-verification-token",
        "trigger_id": new_trigger_id(),
        "container": {
            "type": "message",
            "message_ts": ephemeral["ts"],
            "channel_id": ephemeral["channel"],
            "is_ephemeral": True,
            "thread_ts": thread_ts or ephemeral.get("thread_ts"),
        },
        "channel": {"id": ephemeral["channel"], "name": "help"},
        "state": {"values": {}},
        "response_url": run.slack.response_url(ephemeral["ts"]),
        "actions": [
            {
                "type": "button",
                "action_id": action_id,
                "block_id": block_id,
                "value": element.get("value"),
                "action_ts": str(time.time()),
            }
        ],
    }
    assert run.send.interaction(payload).status == 200
    run.bot.wait_idle()


def wait_ephemeral(run: Running, ts: str, action_id: str, user: str = "U1") -> dict[str, Any]:
    found = run.slack.wait_for(lambda: [e for e in ephemerals_in(run, ts, user) if has_action(e, action_id)])
    run.bot.wait_idle()
    return dict(found[-1])


# -- auto ------------------------------------------------------------------------------------------------


def test_auto_answers_a_top_level_question_in_its_thread_once(run: Running, world: World) -> None:
    modes(world, auto=True)
    ts = new_ts()
    message(run, LAPTOP, ts=ts)
    message(run, LAPTOP, ts=ts)  # Slack's retry, or a second replica's copy
    assert (
        run.send.event(
            {
                "type": "message",
                "channel": "C1",
                "channel_type": "channel",
                "user": "U1",
                "text": LAPTOP,
                "ts": ts,
            },
            retry_num=1,
        ).status
        == 200
    )
    found = wait_answers(run, "C1", ts)
    assert len(found) == 1 and "IT portal" in text_of(found[0]) and has_action(found[0], "feedback")
    assert len(public(run, "C1", ts)) == 1  # no placeholder before it: the answer is a new reply
    assert len(run.slack.calls_to("chat.postMessage")) == 1


def test_auto_ignores_chit_chat_and_posts_nothing_public_for_what_the_wiki_lacks(
    run: Running, world: World
) -> None:
    modes(world, auto=True)
    chat = message(run, "good morning everyone, thanks for yesterday")
    asked = message(run, FRANCE, user="U2")
    run.slack.wait_for(
        lambda: (
            ephemerals_in(run, asked, "U2")
            and any(NOT_FOUND_PRIVATELY in e.get("text", "") for e in ephemerals_in(run, asked, "U2"))
        )
    )
    run.bot.wait_idle()
    assert public(run, "C1", chat) == [] and public(run, "C1", asked) == []
    assert ephemerals_in(run, chat) == []  # statements get nothing at all
    assert not run.slack.calls_to("chat.postMessage")


def test_a_channel_without_auto_ignores_unmentioned_questions(run: Running, world: World) -> None:
    ts = message(run, LAPTOP, channel="C2")
    run.bot.wait_idle()
    time.sleep(0.2)
    run.bot.wait_idle()
    assert public(run, "C2", ts) == [] and run.slack.ephemerals() == []


def test_auto_thread_replies_between_people_are_not_answered(run: Running, world: World) -> None:
    modes(world, auto=True)
    ts = message(run, LAPTOP)
    wait_answers(run, "C1", ts)
    message(run, "ok I filed it on the portal", thread_ts=ts, user="U2")
    run.bot.wait_idle()
    assert len(public(run, "C1", ts)) == 1
    message(run, "and how long does the delivery take?", thread_ts=ts)  # a follow-up that asks
    run.slack.wait_for(lambda: len(public(run, "C1", ts)) == 2)
    run.bot.wait_idle()


# -- private first ---------------------------------------------------------------------------------------


def test_private_answers_only_the_asker_until_they_share(run: Running, world: World) -> None:
    modes(world, private=True)
    ts = mention(run)
    eph = wait_ephemeral(run, ts, SHARE_ACTION)
    assert "IT portal" in text_of(eph) and has_action(eph, KEEP_ACTION) and has_action(eph, "feedback")
    assert not has_action(eph, "explain")  # Explain posts in the thread: only after Share
    assert public(run, "C1", ts) == [] and not run.slack.calls_to("chat.postMessage")

    press_ephemeral(run, eph, SHARE_ACTION)
    shared = wait_answers(run, "C1", ts)
    assert "Shared by <@U1>" in text_of(shared[0]) and "IT portal" in text_of(shared[0])
    assert has_action(shared[0], "explain") and has_action(shared[0], "feedback")
    responded = run.slack.calls_to("response_url")
    assert responded and responded[-1].params.get("delete_original") is True

    press_ephemeral(run, eph, SHARE_ACTION)  # a second press shares nothing twice
    assert len(answers(run.slack, "C1", ts)) == 1


def test_auto_and_private_together_answer_a_top_level_question_privately(run: Running, world: World) -> None:
    modes(world, auto=True, private=True)
    ts = message(run, LAPTOP)
    eph = wait_ephemeral(run, ts, SHARE_ACTION)
    assert "IT portal" in text_of(eph) and public(run, "C1", ts) == []


def test_keep_to_myself_removes_the_buttons_and_posts_nothing(run: Running, world: World) -> None:
    modes(world, private=True)
    ts = mention(run)
    eph = wait_ephemeral(run, ts, SHARE_ACTION)
    press_ephemeral(run, eph, KEEP_ACTION)
    kept = run.slack.calls_to("response_url")[-1].params
    assert kept.get("replace_original") is True
    assert "IT portal" in str(kept.get("blocks")) and SHARE_ACTION not in str(kept.get("blocks"))
    assert public(run, "C1", ts) == []


def test_a_share_press_naming_an_answer_of_another_thread_is_refused(run: Running, world: World) -> None:
    modes(world, private=True)
    ts = mention(run)
    eph = wait_ephemeral(run, ts, SHARE_ACTION)
    other = mention(run, user="U2")
    wait_ephemeral(run, other, SHARE_ACTION, user="U2")
    press_ephemeral(run, eph, SHARE_ACTION, user="U2", thread_ts=other)  # U1's answer, pressed in U2's thread
    assert public(run, "C1", ts) == [] and public(run, "C1", other) == []
    refusals = ephemerals_in(run, other, "U2")
    assert "IT portal" not in text_of(refusals[-1]) and "can't find that answer" in refusals[-1]["text"]


# -- experts ---------------------------------------------------------------------------------------------


def test_still_need_help_calls_exactly_the_experts_once_and_mark_resolved_resolves_it(
    run: Running, world: World
) -> None:
    experts(world)
    ts = mention(run, f"<@UBOT> {FRANCE}")
    found = wait_answers(run, "C1", ts)
    assert has_action(found[0], ESCALATE_ACTION)  # a "not found" offers it where there are experts
    press(run, found[0], ESCALATE_ACTION)
    run.bot.wait_idle()
    pings = [m for m in public(run, "C1", ts) if has_action(m, RESOLVE_ACTION)]
    assert len(pings) == 1
    text = pings[0]["text"] + text_of(pings[0])
    assert "<@U7ANA" in text and "<!subteam^S0HELP" in text and "<@U1>" in text and "France" in text
    assert world.admin.channels.counts().opened == 1
    escalation = world.admin.channels.open_escalation(channel="C1", thread=ts)
    assert escalation is not None and escalation.message_ref == pings[0]["ts"]

    press(run, found[0], ESCALATE_ACTION, user="U2")  # again: no second ping
    run.bot.wait_idle()
    assert len([m for m in public(run, "C1", ts) if has_action(m, RESOLVE_ACTION)]) == 1
    assert world.admin.channels.counts().opened == 1

    press(run, pings[0], RESOLVE_ACTION, user="U7ANA")
    run.bot.wait_idle()
    press(run, pings[0], RESOLVE_ACTION, user="U7ANA")
    run.bot.wait_idle()
    now = run.slack.message("C1", pings[0]["ts"])
    assert now is not None and "Resolved by <@U7ANA>" in now["text"] and not has_action(now, RESOLVE_ACTION)
    counts = world.admin.channels.counts()
    assert (counts.opened, counts.resolved) == (1, 1)


def test_a_check_mark_reaction_resolves_and_a_down_vote_offers_help(run: Running, world: World) -> None:
    experts(world)
    ts = mention(run)
    found = wait_answers(run, "C1", ts)
    assert not has_action(found[0], ESCALATE_ACTION)  # an answer: offered only after a 👎
    vote(run, found[0], "down")
    offer = wait_ephemeral(run, ts, ESCALATE_ACTION)
    press_ephemeral(run, offer, ESCALATE_ACTION)
    ping = next(m for m in public(run, "C1", ts) if has_action(m, RESOLVE_ACTION))
    assert "<@U7ANA" in text_of(ping) and "did not settle it" in text_of(ping)
    for _ in range(2):  # the same ✅ twice (Slack's retry): resolved once
        reaction = {
            "type": "reaction_added",
            "user": "U7ANA",
            "reaction": "white_check_mark",
            "item_user": "UBOT",
            "item": {"type": "message", "channel": "C1", "ts": ping["ts"]},
            "event_ts": new_ts(),
        }
        assert run.send.event(reaction).status == 200
        run.bot.wait_idle()
    counts = world.admin.channels.counts()
    assert (counts.opened, counts.resolved) == (1, 1)
    assert "Resolved by <@U7ANA>" in (run.slack.message("C1", ping["ts"]) or {}).get("text", "")
    assert len([c for c in run.slack.calls_to("chat.update") if c.params.get("ts") == ping["ts"]]) == 1


def test_without_experts_still_need_help_is_not_offered(run: Running, world: World) -> None:
    modes(world, auto=True)
    asked = message(run, FRANCE)
    found = run.slack.wait_for(lambda: ephemerals_in(run, asked))
    run.bot.wait_idle()
    assert not has_action(found[-1], ESCALATE_ACTION) and public(run, "C1", asked) == []


# -- the independent shared fake -------------------------------------------------------------------------


def test_private_then_share_against_the_shared_fake(
    shared_fakes: Callable[[str], ModuleType], world: World
) -> None:
    fake = shared_fakes("fake_slack")
    world.admin.channels.set_private("C0GENERAL", True, platform="slack", by=ADMIN)
    with live_bot(fake, world) as live:
        event = fake.app_mention_event(f"<@{fake.BOT_USER_ID}> {LAPTOP}", channel="C0GENERAL")
        reply = fake.post_event(live.url, fake.event_envelope(event), SIGNING_SECRET)
        assert reply.status == 200

        def offered() -> list[dict[str, Any]]:
            got = _ephemerals(live.api_url)
            return [
                e
                for e in got
                if e.get("thread_ts") == event["ts"]
                and any(b["action_id"] == SHARE_ACTION for b in fake.find_buttons(e.get("blocks")))
            ]

        eph = wait_for(offered)[-1]
        live.bot.wait_idle()
        assert "IT portal" in fake.message_text(eph)
        assert not [m for m in live.slack.messages("C0GENERAL", event["ts"]) if m.get("bot_id")]
        share = next(b for b in fake.find_buttons(eph["blocks"]) if b["action_id"] == SHARE_ACTION)
        pressed = fake.press_ephemeral_button(
            live.url, SIGNING_SECRET, eph, share, fake_slack_url=live.api_url
        )
        assert pressed.status == 200
        posted = wait_for(
            lambda: [
                m
                for m in live.slack.messages("C0GENERAL", event["ts"])
                if "Shared by" in fake.message_text(m)
            ]
        )
        live.bot.wait_idle()
        assert "IT portal" in fake.message_text(posted[-1])
        gone = [e for e in _ephemerals(live.api_url) if e["ts"] == eph["ts"]]
        assert gone and gone[0].get("deleted") is True


def _ephemerals(api_url: str) -> list[dict[str, Any]]:
    import json
    import urllib.request

    root = api_url.split("/api/")[0]
    with urllib.request.urlopen(f"{root}/__ephemerals", timeout=5) as reply:
        return list(json.loads(reply.read())["ephemerals"])
