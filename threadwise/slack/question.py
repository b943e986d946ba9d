"""A question to answer in a Slack thread: the unit the bot's listeners and buttons hand to its workers."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from threadwise.chat.answering import empty_question
from threadwise.db.conversations import ThreadKey
from threadwise.slack.identity import is_direct_message
from threadwise.slack.mrkdwn import SLACK, plain_question

PLATFORM = "slack"
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
    external: bool = False  # the asker belongs to another organisation (Slack Connect) and is not let in

    @property
    def key(self) -> ThreadKey:
        return ThreadKey(PLATFORM, self.team, self.channel, self.thread_ts)


def question_of(body: dict[str, Any], event: dict[str, Any], context: Any) -> Question | None:
    """The question of a message or app_mention event; None without a channel, a user or a ts."""
    channel, user, ts = event.get("channel"), event.get("user"), event.get("ts")
    if not (isinstance(channel, str) and isinstance(user, str) and isinstance(ts, str)):
        return None
    team = installed_in(body)[0] or body.get("team_id") or event.get("team") or context.team_id or ""
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


def installed_in(body: dict[str, Any]) -> tuple[str, str]:
    """The workspace and organisation ("" where none) of the installation this event was delivered for: Slack
    names them in the envelope's `authorizations` (in a Slack Connect channel the envelope's own `team_id` can
    be the other organisation's); an org-wide install names only the organisation."""
    first = _authorization(body)
    team, enterprise = first.get("team_id"), first.get("enterprise_id")
    return (team if isinstance(team, str) else "", enterprise if isinstance(enterprise, str) else "")


def of_another_organisation(body: dict[str, Any], event: dict[str, Any], *, home: Collection[str]) -> bool:
    """True when the author of `event` belongs to another organisation than the installation (`home`: the
    configured or learned team and enterprise ids, plus what the envelope's `authorizations` name).

    The author's team is the event's `user_team` (a workspace `T…`, or an organisation `E…` in an app_mention
    from an Enterprise Grid), else its `team`. A channel shared only inside one Enterprise Grid organisation
    has `is_ext_shared_channel: false` though its members' teams differ: those are the same organisation.
    Without a known author team or a known home, nobody is called external."""
    homes = {h for h in (*home, *installed_in(body)) if h}
    author = next((t for t in (event.get("user_team"), event.get("team")) if isinstance(t, str) and t), "")
    if not (homes and author) or author in homes:
        return False
    return body.get("is_ext_shared_channel") is not False


def _authorization(body: dict[str, Any]) -> dict[str, Any]:
    auths = body.get("authorizations")
    return auths[0] if isinstance(auths, list) and auths and isinstance(auths[0], dict) else {}


def refusal_of(question: Question, *, max_chars: int) -> str | None:
    """Why `question` is not answered (politely), or None."""
    if not question.text:
        return empty_question(SLACK)
    if question.external:
        return EXTERNAL
    if len(question.text) > max_chars:
        return TOO_LONG.format(length=len(question.text), limit=max_chars)
    return None
