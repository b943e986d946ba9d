"""A question to answer in a Slack thread: the unit the bot's listeners and buttons hand to its workers."""

from __future__ import annotations

from dataclasses import dataclass

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
