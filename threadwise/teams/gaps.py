"""Knowledge gaps in Teams, for admins: `admin gaps` (the summary on demand), `admin digest here|off` and the
weekly digest into the chat or channel chosen. The words come from reports/summary.py, written as Markdown.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from microsoft_teams.api.models.account import Account

from threadwise.db.conversations import ThreadKey
from threadwise.reports.service import DEFAULT_DAYS, GapReports
from threadwise.reports.summary import MARKDOWN, TOP, gaps_summary
from threadwise.sync.digest import DigestTargets
from threadwise.teams import cards
from threadwise.teams.activity import PLATFORM, Place

COMMANDS = ("gaps", "digest")


def summary_text(reports: GapReports, *, days: int = DEFAULT_DAYS) -> str:
    """The summary as Teams Markdown (a blank line between lines, which Teams otherwise joins)."""
    return "\n\n".join(
        gaps_summary(reports.top_groups(TOP, days=days), days=days, markup=MARKDOWN).split("\n")
    )


def target_of(place: Place) -> dict[str, Any]:
    """What the digest needs to post into this conversation later: a chat, or the channel (a new thread)."""
    return {
        "conversation": place.conversation.partition(";messageid=")[0],
        "service_url": place.service_url,
        "kind": place.kind,
        "tenant": place.key.workspace,
        "bot_id": place.bot.id,
        "bot_name": place.bot.name or "",
    }


def place_of_target(target: dict[str, Any]) -> Place:
    conversation = str(target["conversation"])
    return Place(
        key=ThreadKey(PLATFORM, str(target.get("tenant", "")), conversation, ""),
        conversation=conversation,
        service_url=str(target["service_url"]),
        bot=Account(id=str(target["bot_id"]), name=str(target.get("bot_name", ""))),
        kind=str(target.get("kind", "personal")),
        user="",
    )


class TeamsGaps:
    """`admin gaps`, `admin digest here|off` and the weekly digest; `send(place, text)` posts Markdown."""

    def __init__(
        self, *, reports: GapReports, targets: DigestTargets, send: Callable[[Place, str], object]
    ) -> None:
        self.reports = reports
        self.targets = targets
        self.send = send

    def run(self, command: str, place: Place) -> str:
        """The reply to `gaps` or `digest …` (the caller has checked that an admin asks)."""
        words = command.split()
        if words[0] == "gaps":
            return summary_text(self.reports)
        choice = words[1].lower() if len(words) > 1 else ""
        if choice == "here":
            self.targets.set(PLATFORM, target_of(place), by=place.user)
            return "Done: the knowledge-gap summary comes here once a week."
        if choice == "off":
            self.targets.clear(PLATFORM)
            return "Done: no weekly knowledge-gap digest any more."
        state = "is off" if self.targets.get(PLATFORM) is None else "is on"
        return f"The weekly knowledge-gap digest {state}. `admin digest here` sends it to this chat; `admin digest off` stops it."

    def post_digest(self) -> bool:
        """Post the summary where the admins chose; whether it went out (off: nothing to do)."""
        target = self.targets.get(PLATFORM)
        if target is None:
            return False
        self.send(place_of_target(target), summary_text(self.reports))
        return True


def teams_gaps(
    reports: GapReports | None, targets: DigestTargets, send: Callable[[Place, Any], object]
) -> TeamsGaps | None:
    """The Teams side of the knowledge gaps, posting through `send(place, activity)`; None without a report."""
    if reports is None:
        return None
    return TeamsGaps(
        reports=reports, targets=targets, send=lambda place, text: send(place, cards.notice(text))
    )
