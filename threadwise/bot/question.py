"""A question to answer in a Slack thread: the unit the bot's listeners and buttons hand to its workers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from threadwise.bot.mrkdwn import plain_question
from threadwise.bot.slack_identity import is_direct_message
from threadwise.db.conversations import ThreadKey

PLATFORM = "slack"
EMPTY_QUESTION = (
    "Hi! Ask me a question about your Confluence pages, for example "
    "_@Threadwise how do I request a new laptop?_ I'll answer in the thread."
)
TOO_LONG = (
    "That question is too long for me ({length:,} characters; I read up to {limit:,}). "
    "Please ask it in fewer words, or link the page it is about."
)
EXTERNAL = "Sorry, I only answer members of this workspace: the pages I know are internal to it."


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


def refusal_of(question: Question, *, external: bool, max_chars: int) -> str | None:
    """Why `question` is not answered (politely), or None. `external`: the asker is of another organisation
    and not let in."""
    if not question.text:
        return EMPTY_QUESTION
    if external:
        return EXTERNAL
    if len(question.text) > max_chars:
        return TOO_LONG.format(length=len(question.text), limit=max_chars)
    return None
