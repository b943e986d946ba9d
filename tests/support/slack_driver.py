"""Driving the real Bolt app through its HTTP endpoint as Slack would: mentions, messages, button presses and
slash commands, and reading what the bot posted in the fake Slack (shared by the Slack test modules)."""

from __future__ import annotations

import json
from typing import Any

from tests.support.fake_slack import FakeSlack
from tests.support.slack_events import find_action
from tests.support.slack_world import Running

WORKSPACE_ADMIN = "UWSADMIN"
LAPTOP = "<@UBOT> how do I request a new laptop?"
_ts = iter(range(1, 10**6))


def new_ts() -> str:
    return f"1700000000.{next(_ts):06d}"


def mention(
    run: Running,
    text: str = LAPTOP,
    *,
    channel: str = "C1",
    ts: str | None = None,
    thread_ts: str | None = None,
    user: str = "U1",
    **options: Any,
) -> str:
    ts = ts or new_ts()
    event = {"type": "app_mention", "user": user, "text": text, "ts": ts, "channel": channel, "event_ts": ts}
    if thread_ts:
        event["thread_ts"] = thread_ts
    reply = run.send.event(event, **options)
    assert reply.status == 200, reply
    return ts


def message(
    run: Running,
    text: str,
    *,
    channel: str = "C1",
    thread_ts: str | None = None,
    channel_type: str = "channel",
    user: str = "U1",
    ts: str | None = None,
    **fields: Any,
) -> str:
    ts = ts or new_ts()
    event = {
        "type": "message",
        "channel": channel,
        "channel_type": channel_type,
        "user": user,
        "text": text,
        "ts": ts,
        "event_ts": ts,
        **fields,
    }
    if thread_ts:
        event["thread_ts"] = thread_ts
    assert run.send.event(event).status == 200
    return ts


def has_action(msg: dict[str, Any], action_id: str) -> bool:
    return any(e.get("action_id") == action_id for b in msg.get("blocks", []) for e in b.get("elements", []))


def answers(slack: FakeSlack, channel: str, thread_ts: str) -> list[dict[str, Any]]:
    """The bot's finished answers in a thread (not placeholders or notes)."""
    return [
        m
        for m in slack.bot_messages(channel, thread_ts)
        if has_action(m, "explain") or has_action(m, "retry")
    ]


def wait_answers(run: Running, channel: str, thread_ts: str, count: int = 1) -> list[dict[str, Any]]:
    found = run.slack.wait_for(
        lambda: (
            len(answers(run.slack, channel, thread_ts)) >= count and answers(run.slack, channel, thread_ts)
        )
    )
    run.bot.wait_idle()
    return list(found)


def text_of(msg: dict[str, Any]) -> str:
    """All the text in a message's blocks."""
    return json.dumps(msg.get("blocks", []), ensure_ascii=False)


def turn_id_of(msg: dict[str, Any]) -> int:
    element, _ = find_action(msg, "explain") if has_action(msg, "explain") else find_action(msg, "retry")
    return int(element["value"])


def press(
    run: Running, msg: dict[str, Any], action_id: str, *, user: str = "U1", channel: str = "C1", **extra: Any
) -> None:
    element, block_id = find_action(msg, action_id)
    action = {"type": element["type"], "action_id": action_id, "block_id": block_id, **extra}
    if "value" in element and "value" not in extra:
        action["value"] = element["value"]
    reply = run.send.block_action(user=user, channel=channel, message=msg, action=action)
    assert reply.status == 200, reply


def vote(run: Running, msg: dict[str, Any], value: str, *, user: str = "U1") -> None:
    press(run, msg, "feedback", user=user, value=value)
    run.bot.wait_idle()


def command(run: Running, text: str, *, user: str = "U1", channel: str = "C1") -> str:
    """Run a slash command; its ephemeral replies (ack and response_url), joined."""
    before = len(run.slack.calls_to("response_url"))
    reply = run.send.command(text, user=user, channel=channel, response_url=run.slack.response_url())
    assert reply.status == 200, reply
    run.bot.wait_idle()
    later = [c.params.get("text", "") for c in run.slack.calls_to("response_url")[before:]]
    acked = json.loads(reply.body).get("text", "") if reply.body else ""
    return "\n".join([acked, *later]).strip()
