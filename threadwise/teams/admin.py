"""`@Threadwise admin status|spaces|add KEY|remove KEY|sync [KEY]|channel|everyone|help` in Teams: the chat
layer's AdminCommands (and so the same AdminService as `/threadwise` in Slack and the CLI), in Teams Markdown.

Admins are the Entra object ids (the `aadObjectId` Teams sends with every activity) listed in
THREADWISE_TEAMS_ADMINS; everyone may read, only they may change what is synced.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from threadwise.chat.admin_commands import AdminCommands
from threadwise.chat.markup import escape
from threadwise.chat.status_text import feedback_lines
from threadwise.chat.turn_views import page_date
from threadwise.db.channel_modes import Expert
from threadwise.sync.admin import AdminService

PREFIX = "admin"
HELP = (
    "*Threadwise commands* (in a channel or group chat, mention me first: `@Threadwise admin status`)\n"
    "`admin status` — what I know: spaces, pages, evidence, last sync\n"
    "`admin spaces` — the Confluence spaces I sync\n"
    "`admin add KEY [--parent PAGE_ID] [--exclude-label LABEL]` — sync a space (admins)\n"
    "`admin remove KEY` — stop syncing a space and forget its pages (admins)\n"
    "`admin sync [KEY] [--full]` — sync now (admins)\n"
    "`admin channel [KEY … | all]` — which spaces answer in this channel (changing it: admins)\n"
    "`admin everyone [KEY on|off]` — spaces everyone who can reach me may view: with per-user permissions "
    "their unrestricted pages answer in channels and group chats (changing it: admins)\n"
    "`admin feedback` — 👍/👎 counts and the latest 👎 with their questions and comments (admins)\n"
    "`admin gaps` — the largest groups of questions I could not answer (admins)\n"
    "`admin digest here | off` — a weekly knowledge-gap summary in this chat; off by default (admins)\n"
    "`admin auto [on|off]` — answer questions in this channel without a mention (changing it: admins)\n"
    "`admin private [on|off]` — answers here go to the asker first, with Share (changing it: admins)\n"
    "`admin experts [@people | none]` — whom “Still need help?” calls in here (changing it: admins)\n"
    "`admin help` — this list\n"
    "To ask a question, mention me in a channel or write to me in a personal chat."
)


_ICONS = {"ok": "✅", "warning": "⚠️", "failed": "❌"}


@dataclass(frozen=True)
class TeamsMarkup:
    """Teams Markdown, for the chat layer's texts (`threadwise.chat.markup.Markup`)."""

    command: str = PREFIX

    def bold(self, text: str) -> str:
        return f"**{text}**"

    def italic(self, text: str) -> str:
        return f"*{text}*"

    def date(self, iso: str) -> str:
        return page_date(iso)

    def user(self, user_id: str, name: str = "") -> str:
        return name or user_id

    def group(self, group_id: str, name: str) -> str:
        return name or group_id

    def icon(self, name: str) -> str:
        return _ICONS[name]

    def link(self, url: str, label: str) -> str:
        return link(url, label)

    def code(self, text: str) -> str:
        return f"`{text}`"


TEAMS = TeamsMarkup()


def link(url: str, label: str) -> str:
    """A Markdown link; just the label when there is no usable URL."""
    label = escape(" ".join(label.split())).replace("[", "(").replace("]", ")") or url
    if not url.startswith(("http://", "https://")):
        return label
    return f"[{label}]({url.replace(' ', '%20').replace('(', '%28').replace(')', '%29')})"


def paragraphs(text: str) -> str:
    """Teams joins single line breaks into one paragraph: each line its own."""
    return "\n\n".join(text.split("\n"))


class TeamsAdmins:
    """Admins by Entra object id; a refusal says where the list is kept."""

    def __init__(self, object_ids: Collection[str]) -> None:
        self.object_ids = frozenset(i.lower() for i in object_ids)

    def __call__(self, user: str) -> bool:
        return bool(user) and user.lower() in self.object_ids

    def who(self) -> str:
        return "an admin of this bot (the server's THREADWISE_TEAMS_ADMINS lists them)"


COMMANDS = frozenset(
    {
        "status",
        "spaces",
        "add",
        "remove",
        "sync",
        "channel",
        "everyone",
        "feedback",
        "help",
        "gaps",
        "digest",
        "auto",
        "private",
        "experts",
    }
)
ADMINS_ONLY = ("feedback", "gaps", "digest")


def admin_command(text: str) -> str | None:
    """The command after "admin" ("status", "add DOCS", "" for help), or None when `text` is a question
    ("admin rights for contractors?" is one)."""
    words = text.split()
    if not words or words[0].lower().rstrip(":") != PREFIX:
        return None
    if len(words) > 1 and words[1].lower() not in COMMANDS:
        return None
    return " ".join(words[1:])


def make_commands(admin: AdminService, object_ids: Collection[str]) -> AdminCommands:
    return AdminCommands(
        admin=admin, is_admin=TeamsAdmins(object_ids), markup=TEAMS, help_text=HELP, trigger="teams"
    )


def run_command(
    commands: AdminCommands,
    command: str,
    *,
    user: str,
    channel: str,
    reply: Callable[[str], None],
    feedback: Callable[[], dict[str, Any]],
    gaps: Callable[[str], str] | None = None,
    mentions: Sequence[Expert] = (),
) -> None:
    """Run one admin command; its replies go out as Teams Markdown through `reply`. `feedback` is the admins' summary, which Slack shows on its Home tab; `gaps`
    answers `gaps` and `digest …` in Teams Markdown (None: no knowledge-gap report here)."""
    name = command.split()[0].lower() if command.split() else ""
    if name in ADMINS_ONLY:
        if not commands.is_admin(user):
            reply(
                f"Sorry, only Threadwise admins can use `admin {name}`. Please ask {commands.is_admin.who()}."
            )
            return
        if name == "feedback":
            counts = commands.admin.channels.counts()
            help_line = f"**Still need help** (calls to a channel's experts): {counts.opened} · resolved {counts.resolved}"
            reply(paragraphs("\n".join([*feedback_lines(feedback(), TEAMS), help_line])))
            return
        if gaps is not None:
            reply(gaps(command))
            return
    commands.run(
        command, user=user, channel=channel, reply=lambda text: reply(paragraphs(text)), mentions=mentions
    )
