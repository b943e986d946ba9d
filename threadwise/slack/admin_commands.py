"""`/threadwise status|spaces|add|remove|sync|channel|everyone|help`: the slash command, over the same AdminService as the CLI.

Everyone may read (`status`, `spaces`, `help`, `channel` without arguments); changes need an admin: a user
listed in the settings, or (when allowed) a workspace admin or owner as Slack's users.info says.
Replies are mrkdwn, sent through `reply` as they become ready (a sync reports when it has finished).
"""

from __future__ import annotations

import logging
import shlex
import threading
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any, Protocol

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from threadwise.slack.home import folder_line, space_line
from threadwise.slack.mrkdwn import escape
from threadwise.sync.admin import AdminError, AdminService

log = logging.getLogger(__name__)

Reply = Callable[[str], None]
# an admins-only command a front end adds (args, *, user, channel) -> its reply, e.g. `gaps`, `digest`
Extra = Callable[..., str]

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
    "`/threadwise help` — this list\n"
    "To ask a question, mention me in a channel or write to me directly."
)
CHANGES = {"add", "remove", "sync"}


class Admins(Protocol):
    """Who may change things (`admins(user)`), and whom to ask (`admins.who()`) for a refusal."""

    def __call__(self, user: str) -> bool: ...
    def who(self) -> str: ...


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


def is_instant(text: str) -> bool:
    """Whether the command can be answered within Slack's 3 seconds without touching the index or Slack."""
    words = text.split()
    return not words or words[0].lower() == "help"


class AdminCommands:
    """The commands over the admin service; `help_text` and `trigger` (recorded with syncs) per platform."""

    def __init__(
        self,
        *,
        admin: AdminService,
        is_admin: Admins,
        help_text: str = HELP,
        trigger: str = "slack",
        extra: Mapping[str, Extra] | None = None,
    ) -> None:
        self.admin = admin
        self.is_admin = is_admin
        self.help_text = help_text
        self.trigger = trigger
        self.extra = dict(extra or {})

    def run(self, text: str, *, user: str, channel: str, reply: Reply) -> None:
        """Carry out one command and send what it has to say through `reply`; never raises."""
        try:
            words = shlex.split(text)
        except ValueError:
            words = text.split()
        name, args = (words[0].lower(), words[1:]) if words else ("help", [])
        try:
            if name == "help":
                reply(self.help_text)
            elif name == "status":
                reply(self._status(channel))
            elif name == "spaces":
                reply(self._spaces(channel))
            elif name == "channel":
                reply(self._channel(args, user=user, channel=channel))
            elif name == "everyone":
                reply(self._everyone(args, user=user))
            elif name in self.extra:
                if not self.is_admin(user):
                    reply(
                        f"Sorry, only Threadwise admins can use `{escape(name)}`. Please ask {self.is_admin.who()}."
                    )
                    return
                reply(self.extra[name](args, user=user, channel=channel))
            elif name in CHANGES:
                if not self.is_admin(user):
                    reply(
                        f"Sorry, only Threadwise admins can change what I sync. Please ask {self.is_admin.who()}. "
                        "Everyone may use `/threadwise status` and `/threadwise help`."
                    )
                    return
                getattr(self, "_" + name)(args, user=user, reply=reply)
            else:
                reply(f"I don't know the command `{escape(name)}`.\n\n{self.help_text}")
        except AdminError as err:
            reply(f":warning: {escape(str(err))}")
        except Exception as err:
            log.exception("/threadwise %s failed", text)
            reply(
                f":warning: `/threadwise {escape(name)}` failed: {escape(type(err).__name__)}. The error is logged."
            )

    # -- reading --------------------------------------------------------------------------------------

    def _status(self, channel: str) -> str:
        spaces = self.admin.status()
        folders = self.admin.folder_status()
        if not spaces and not folders:
            return "I know nothing yet: no space is synced. An admin can add one with `/threadwise add KEY`."
        pages = sum(s.pages for s in spaces)
        lines = [f"*What I know*: {pages} pages in {len(spaces)} spaces"]
        lines += [space_line(s) for s in spaces] + [folder_line(f) for f in folders[:5]]
        return "\n".join(lines) + "\n" + self._channel_line(channel)

    def _spaces(self, channel: str) -> str:
        configs = self.admin.list_spaces()
        if not configs:
            return "No spaces are configured. An admin can add one with `/threadwise add KEY`."
        lines = ["*Synced spaces*"]
        for c in configs:
            state = "" if c.enabled else " _(disabled)_"
            lines.append(f"• *{escape(c.key)}* {escape(c.name)} — {escape(c.scope.describe())}{state}")
        return "\n".join(lines) + "\n" + self._channel_line(channel)

    def _channel_line(self, channel: str) -> str:
        limited = self.admin.channel_spaces(channel) if channel else ()
        if not limited:
            return "In this channel I answer from all synced spaces."
        return "In this channel I answer only from " + ", ".join(f"*{escape(k)}*" for k in limited) + "."

    # -- changing -------------------------------------------------------------------------------------

    def _channel(self, args: list[str], *, user: str, channel: str) -> str:
        if not args:
            return self._channel_line(channel)
        if not self.is_admin(user):
            return f"Sorry, only Threadwise admins can limit a channel to some spaces. Please ask {self.is_admin.who()}."
        keys = [] if [a.lower() for a in args] == ["all"] else [a.strip(",") for a in args]
        self.admin.set_channel_spaces(channel, keys)
        return "Done. " + self._channel_line(channel)

    def _everyone(self, args: list[str], *, user: str) -> str:
        """Show, declare or withdraw that everyone with access to the bot may view a space (the admin's word:
        Confluence's own space permissions are not consulted for it)."""
        if not args:
            return self._everyone_line()
        if len(args) != 2 or args[1].lower() not in ("on", "off"):
            return "For example `everyone DOCS on` (or `off`); without arguments: what is declared."
        if not self.is_admin(user):
            return f"Sorry, only Threadwise admins can declare who may view a space. Please ask {self.is_admin.who()}."
        config = self.admin.set_everyone_may_view(args[0], args[1].lower() == "on")
        said = "may view" if config.everyone_may_view else "may no longer be assumed to view"
        return f"Done: everyone who can reach me {said} *{escape(config.key)}*. " + self._everyone_line()

    def _everyone_line(self) -> str:
        declared = [c.key for c in self.admin.list_spaces() if c.everyone_may_view]
        if not declared:
            return (
                "No space is declared viewable by everyone who can reach me: with per-user permissions, "
                "channels and group chats get answers from no space."
            )
        spaces = ", ".join(f"*{escape(k)}*" for k in declared)
        return (
            f"Everyone who can reach me may view {spaces}: with per-user permissions their pages without "
            "restrictions answer in channels and group chats too."
        )

    def _add(self, args: list[str], *, user: str, reply: Reply) -> None:
        if not args:
            reply("Which space? For example `/threadwise add DOCS`.")
            return
        key, parent, labels = args[0], None, []
        rest = iter(args[1:])
        for word in rest:
            if word == "--parent":
                parent = next(rest, None)
            elif word == "--exclude-label":
                labels.append(next(rest, ""))
            else:
                reply(f"I don't understand `{escape(word)}`. {HELP.splitlines()[3]}")
                return
        config = self.admin.add_space(key, parent_id=parent, exclude_labels=labels, added_by=user)
        reply(
            f"Added *{escape(config.scope.describe())}* ({escape(config.name)}). Syncing it now; I'll report here."
        )
        self._sync([config.key], user=user, reply=reply)

    def _remove(self, args: list[str], *, user: str, reply: Reply) -> None:
        if len(args) != 1:
            reply("Which space? For example `/threadwise remove DOCS`.")
            return
        removed = self.admin.remove_space(args[0])
        reply(f"Removed *{escape(args[0])}*: {removed} pages are gone from the index.")

    def _sync(self, args: list[str], *, user: str, reply: Reply) -> None:
        full = "--full" in args
        keys = [a for a in args if a != "--full"]
        if len(keys) > 1:
            reply("One space at a time, or none for all: `/threadwise sync [KEY] [--full]`.")
            return
        reports = self.admin.sync(
            keys[0] if keys else None,
            full=full,
            trigger=self.trigger,
            on_wait=lambda who: reply(
                f"A sync is running on {escape(who)}; yours starts when it has finished."
            ),
        )
        if not reports:
            reply("No spaces are configured. Add one with `/threadwise add KEY`.")
            return
        lines = []
        for r in reports:
            icon = {"ok": ":white_check_mark:", "partial": ":warning:"}.get(r.status, ":x:")
            lines.append(f"{icon} {escape(r.summary())}")
        reply("*Sync finished*\n" + "\n".join(lines))
