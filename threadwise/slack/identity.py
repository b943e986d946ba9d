"""Who asks in Slack, and whether anyone else sees the answer.

The asker's e-mail comes from `users.info` (`user.profile.email`, which Slack fills only for a token with the
`users:read.email` scope); `doctor` says when the token lacks it. A direct message with the bot (an `im`) is
private; channels, private channels, group DMs (`mpim`) and shared channels are not.
"""

from __future__ import annotations

from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from threadwise.chat.conversations import ConversationService, TurnView
from threadwise.chat.identity import EmailDirectory, LookupFailed
from threadwise.permissions import Asker


def slack_email(client: WebClient, user: str) -> str | None:
    """`users.info` → the profile's e-mail; None for a bot, a deactivated user or a profile without one."""
    try:
        info: Any = client.users_info(user=user).get("user") or {}
    except SlackApiError as err:
        raise LookupFailed(f"users.info refused: {err.response.get('error')}") from err
    except OSError as err:  # unreachable, timed out
        raise LookupFailed(f"users.info failed: {type(err).__name__}") from err
    if info.get("deleted") or info.get("is_bot"):
        return None
    return (info.get("profile") or {}).get("email") or None


def slack_directory(client: WebClient, *, ttl: float) -> EmailDirectory:
    """Slack user id → e-mail, cached for `ttl` seconds."""
    return EmailDirectory(lookup=lambda user: slack_email(client, user), ttl=ttl)


def is_direct_message(channel: str, channel_type: str | None = None) -> bool:
    """Whether only the asker and the bot see this conversation: a DM (`im`). Events say so in `channel_type`;
    a button press names only the channel, and Slack's DM ids start with "D"."""
    if channel_type:
        return channel_type == "im"
    return channel.startswith("D")


class SlackAskers:
    """The Asker of a Slack user in a conversation, and whether they may see more of a stored answer."""

    def __init__(self, *, directory: EmailDirectory, conversations: ConversationService) -> None:
        self.directory = directory
        self.conversations = conversations

    def asker(self, user: str, *, private: bool) -> Asker:
        """Who asks, for the permission service: their e-mail is looked up only when answers depend on it."""
        email = self.directory.email(user) if self.conversations.per_user else None
        return Asker(email=email, private=private)

    def may_see(self, user: str, channel: str, turn: TurnView) -> bool:
        """Whether `user`, pressing a button in `channel`, may be shown more of the stored answer `turn`."""
        return self.conversations.may_see(turn, self.asker(user, private=is_direct_message(channel)))
