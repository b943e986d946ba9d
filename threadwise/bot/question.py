"""A question to answer in a Slack thread: the unit the bot's listeners and buttons hand to its workers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from threadwise.bot.mrkdwn import plain_question
from threadwise.bot.slack_identity import is_direct_message
from threadwise.db.conversations import ThreadKey

PLATFORM = "slack"


@dataclass(frozen=True)
class Question:
    """One question to answer in a thread."""

    team: str
    channel: str
    thread_ts: str
    user: str
    text: str
    ts: str = ""  # the question message's own ts ("" for a question asked by a button)
    user_team: str = ""  # the asker's own workspace when Slack says (Slack Connect: another organisation's)
    private: bool = False  # a direct message with the bot: nobody else sees the answer

    @property
    def key(self) -> ThreadKey:
        return ThreadKey(PLATFORM, self.team, self.channel, self.thread_ts)


def question_of(body: dict[str, Any], event: dict[str, Any], context: Any) -> Question | None:
    """The question of a message or app_mention event; None without a channel, a user or a ts."""
    channel, user, ts = event.get("channel"), event.get("user"), event.get("ts")
    if not (isinstance(channel, str) and isinstance(user, str) and isinstance(ts, str)):
        return None
    team = body.get("team_id") or event.get("team") or context.team_id or ""
    text = plain_question(str(event.get("text") or ""), bot_user_id=context.bot_user_id or "")
    return Question(
        team=team,
        channel=channel,
        thread_ts=event.get("thread_ts") or ts,
        user=user,
        text=text,
        ts=ts,
        user_team=str(event.get("user_team") or ""),
        private=is_direct_message(channel, event.get("channel_type")),
    )
