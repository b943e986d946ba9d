"""Slack's side of the admin commands: who is an admin (configured user ids, and workspace admins and owners as
users.info says), `/threadwise help`, and the commands in mrkdwn (`threadwise.chat.admin_commands`)."""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Collection, Mapping
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from threadwise.chat.admin_commands import AdminCommands, Admins, Extra
from threadwise.db.channel_modes import Expert
from threadwise.slack.mrkdwn import SLACK
from threadwise.sync.admin import AdminService

log = logging.getLogger(__name__)

HELP = (
    "*Threadwise commands*\n"
    "`/threadwise status` — what I know: spaces, pages, evidence, last sync\n"
    "`/threadwise spaces` — the Confluence spaces I sync\n"
    "`/threadwise add KEY [--parent PAGE_ID] [--exclude-label LABEL]` — sync a space (admins)\n"
    "`/threadwise remove KEY` — stop syncing a space and forget its pages (admins)\n"
    "`/threadwise sync [KEY] [--full]` — sync now (admins)\n"
    "`/threadwise channel [KEY … | all]` — which spaces answer in this channel (changing it: admins)\n"
    "`/threadwise everyone [KEY on|off]` — spaces everyone who can reach me may view: with per-user "
    "permissions their unrestricted pages answer in channels (changing it: admins)\n"
    "`/threadwise gaps` — the largest groups of questions I could not answer (admins)\n"
    "`/threadwise digest #channel | here | off` — a weekly knowledge-gap summary in a channel; off by default "
    "(admins)\n"
    "`/threadwise auto [on|off]` — answer questions in this channel without a mention (changing it: admins)\n"
    "`/threadwise private [on|off]` — answers here go to the asker first, with Share (changing it: admins)\n"
    "`/threadwise experts [@people @groups | none]` — whom “Still need help?” calls in here (changing it: admins)\n"
    "`/threadwise help` — this list\n"
    "To ask a question, mention me in a channel or write to me directly."
)


class AdminCheck:
    """Who may change things: configured user ids, and workspace admins/owners when `workspace_admins`.

    Slack's answer is cached for `ttl` seconds per user; a failed lookup counts as "not an admin".
    """

    def __init__(
        self,
        *,
        client: WebClient,
        admin_user_ids: Collection[str] = (),
        workspace_admins: bool = True,
        ttl: float = 300.0,
    ) -> None:
        self.client = client
        self.admin_user_ids = frozenset(admin_user_ids)
        self.workspace_admins = workspace_admins
        self.ttl = ttl
        self._cache: dict[str, tuple[float, bool]] = {}
        self._lock = threading.Lock()

    def __call__(self, user: str) -> bool:
        if user in self.admin_user_ids:
            return True
        if not self.workspace_admins or not user:
            return False
        with self._lock:
            cached = self._cache.get(user)
        if cached and time.monotonic() - cached[0] < self.ttl:
            return cached[1]
        try:
            info: Any = self.client.users_info(user=user).get("user") or {}
            allowed = bool(info.get("is_admin") or info.get("is_owner") or info.get("is_primary_owner"))
        except SlackApiError as err:
            log.warning(
                "users.info for %s failed: %s; treating as not an admin", user, err.response.get("error")
            )
            return False
        with self._lock:
            self._cache[user] = (time.monotonic(), allowed)
        return allowed

    def who(self) -> str:
        """Who to ask, for a refusal."""
        named = ", ".join(f"<@{u}>" for u in sorted(self.admin_user_ids))
        if named and self.workspace_admins:
            return f"{named} or a workspace admin"
        return named or "a workspace admin"


def slack_commands(
    *, admin: AdminService, is_admin: Admins, extra: Mapping[str, Extra] | None = None
) -> AdminCommands:
    """`/threadwise …`: the shared commands, in mrkdwn, recorded as Slack's syncs."""
    return AdminCommands(
        admin=admin, is_admin=is_admin, markup=SLACK, help_text=HELP, trigger="slack", extra=extra
    )


_MENTION = re.compile(r"<@([UW][A-Z0-9]+)(?:\|([^>]*))?>|<!subteam\^([A-Z0-9]+)(?:\|@?([^>]*))?>")


def mentions_in(text: str) -> list[Expert]:
    """The people (`<@U…>`) and user groups (`<!subteam^S…|@handle>`) a slash command mentions: Slack writes
    them so when the manifest's command sets `should_escape: true`."""
    found = []
    for m in _MENTION.finditer(text or ""):
        if m.group(1):
            found.append(Expert(kind="user", id=m.group(1), name=m.group(2) or ""))
        else:
            found.append(Expert(kind="group", id=m.group(3), name=m.group(4) or ""))
    return found
