"""The admin commands (`status|spaces|add|remove|sync|channel|everyone|help`) over the same AdminService as the
CLI, for every front end: Slack's `/threadwise …` and Teams' `admin …`.

Everyone may read (`status`, `spaces`, `help`, `channel` without arguments); changes need an admin, as the
front end's `Admins` says. Replies are written in the front end's `Markup` and sent through `reply` as they
become ready (a sync reports when it has finished).
"""

from __future__ import annotations

import logging
import shlex
from collections.abc import Callable, Mapping, Sequence

from threadwise.chat.channel_commands import NAMES as CHANNEL_COMMANDS
from threadwise.chat.channel_commands import channel_command, mode_line
from threadwise.chat.identity import Admins
from threadwise.chat.markup import Markup, escape
from threadwise.chat.status_text import folder_line, space_line
from threadwise.db.channel_modes import Expert
from threadwise.sync.admin import AdminError, AdminService

log = logging.getLogger(__name__)

Reply = Callable[[str], None]
# an admins-only command a front end adds (args, *, user, channel) -> its reply, e.g. `gaps`, `digest`
Extra = Callable[..., str]

CHANGES = {"add", "remove", "sync"}


def is_instant(text: str) -> bool:
    """Whether the command can be answered within Slack's 3 seconds without touching the index or Slack."""
    words = text.split()
    return not words or words[0].lower() == "help"


class AdminCommands:
    """The commands over the admin service; `markup`, `help_text` and `trigger` (recorded with syncs) per platform."""

    def __init__(
        self,
        *,
        admin: AdminService,
        is_admin: Admins,
        markup: Markup,
        help_text: str,
        trigger: str,
        extra: Mapping[str, Extra] | None = None,
    ) -> None:
        self.admin = admin
        self.markup = markup
        self.is_admin = is_admin
        self.help_text = help_text
        self.trigger = trigger
        self.extra = dict(extra or {})

    def run(
        self, text: str, *, user: str, channel: str, reply: Reply, mentions: Sequence[Expert] = ()
    ) -> None:
        """Carry out one command and send what it has to say through `reply`; never raises. `mentions`: the
        people and groups the command mentions, as the front end read them (for `experts`)."""
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
            elif name in CHANNEL_COMMANDS:
                reply(
                    channel_command(
                        name,
                        args,
                        modes=self.admin.channels,
                        channel=channel,
                        user=user,
                        is_admin=self.is_admin,
                        markup=self.markup,
                        platform=self.trigger,
                        mentions=mentions,
                    )
                )
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
                        f"Everyone may use `{self.markup.command} status` and `{self.markup.command} help`."
                    )
                    return
                getattr(self, "_" + name)(args, user=user, reply=reply)
            else:
                reply(f"I don't know the command `{escape(name)}`.\n\n{self.help_text}")
        except AdminError as err:
            reply(f"{self.markup.icon('warning')} {escape(str(err))}")
        except Exception as err:
            log.exception("%s %s failed", self.markup.command, text)
            reply(
                f"{self.markup.icon('warning')} `{self.markup.command} {escape(name)}` failed: {escape(type(err).__name__)}. The error is logged."
            )

    # -- reading --------------------------------------------------------------------------------------

    def _status(self, channel: str) -> str:
        spaces = self.admin.status()
        folders = self.admin.folder_status()
        if not spaces and not folders:
            return f"I know nothing yet: no space is synced. An admin can add one with `{self.markup.command} add KEY`."
        pages = sum(s.pages for s in spaces)
        lines = [f"{self.markup.bold('What I know')}: {pages} pages in {len(spaces)} spaces"]
        lines += [space_line(s, self.markup) for s in spaces] + [
            folder_line(f, self.markup) for f in folders[:5]
        ]
        lines.append(self._channel_line(channel))
        if channel:
            lines.append(mode_line(self.admin.channels.get(channel), self.markup))
        return "\n".join(lines)

    def _spaces(self, channel: str) -> str:
        configs = self.admin.list_spaces()
        if not configs:
            return f"No spaces are configured. An admin can add one with `{self.markup.command} add KEY`."
        lines = [self.markup.bold("Synced spaces")]
        for c in configs:
            state = "" if c.enabled else " " + self.markup.italic("(disabled)")
            lines.append(
                f"• {self.markup.bold(escape(c.key))} {escape(c.name)} — {escape(c.scope.describe())}{state}"
            )
        return "\n".join(lines) + "\n" + self._channel_line(channel)

    def _channel_line(self, channel: str) -> str:
        limited = self.admin.channel_spaces(channel) if channel else ()
        if not limited:
            return "In this channel I answer from all synced spaces."
        return (
            "In this channel I answer only from "
            + ", ".join(self.markup.bold(escape(k)) for k in limited)
            + "."
        )

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
        return (
            f"Done: everyone who can reach me {said} {self.markup.bold(escape(config.key))}. "
            + self._everyone_line()
        )

    def _everyone_line(self) -> str:
        declared = [c.key for c in self.admin.list_spaces() if c.everyone_may_view]
        if not declared:
            return (
                "No space is declared viewable by everyone who can reach me: with per-user permissions, "
                "channels and group chats get answers from no space."
            )
        spaces = ", ".join(self.markup.bold(escape(k)) for k in declared)
        return (
            f"Everyone who can reach me may view {spaces}: with per-user permissions their pages without "
            "restrictions answer in channels and group chats too."
        )

    def _add(self, args: list[str], *, user: str, reply: Reply) -> None:
        if not args:
            reply(f"Which space? For example `{self.markup.command} add DOCS`.")
            return
        key, parent, labels = args[0], None, []
        rest = iter(args[1:])
        for word in rest:
            if word == "--parent":
                parent = next(rest, None)
            elif word == "--exclude-label":
                labels.append(next(rest, ""))
            else:
                reply(f"I don't understand `{escape(word)}`. {self.help_text.splitlines()[3]}")
                return
        config = self.admin.add_space(key, parent_id=parent, exclude_labels=labels, added_by=user)
        reply(
            f"Added {self.markup.bold(escape(config.scope.describe()))} ({escape(config.name)}). Syncing it now; I'll report here."
        )
        self._sync([config.key], user=user, reply=reply)

    def _remove(self, args: list[str], *, user: str, reply: Reply) -> None:
        if len(args) != 1:
            reply(f"Which space? For example `{self.markup.command} remove DOCS`.")
            return
        removed = self.admin.remove_space(args[0])
        reply(f"Removed {self.markup.bold(escape(args[0]))}: {removed} pages are gone from the index.")

    def _sync(self, args: list[str], *, user: str, reply: Reply) -> None:
        full = "--full" in args
        keys = [a for a in args if a != "--full"]
        if len(keys) > 1:
            reply(f"One space at a time, or none for all: `{self.markup.command} sync [KEY] [--full]`.")
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
            reply(f"No spaces are configured. Add one with `{self.markup.command} add KEY`.")
            return
        lines = []
        for r in reports:
            icon = self.markup.icon({"ok": "ok", "partial": "warning"}.get(r.status, "failed"))
            lines.append(f"{icon} {escape(r.summary())}")
        reply(self.markup.bold("Sync finished") + "\n" + "\n".join(lines))
