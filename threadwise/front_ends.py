"""The front ends, as the composition root builds them: their settings (read once, from the app's settings),
which of them `serve` runs, their bots, and the one order they come up in:

    the scheduler (its housekeeping always: the retention purge, the digests; syncs unless --no-sync or no
    Confluence) → Teams' endpoint, the models and the index warmed before it serves when Teams runs
    → Slack, whose endpoint answers "starting" while the models and the index load when it runs alone

Each bot's weekly knowledge-gap digest joins the scheduler. `serve` only calls `FrontEnds.serve`.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    from threadwise.chat.conversations import ConversationService
    from threadwise.connectors.confluence import ConfluenceClient
    from threadwise.reports.service import GapReports
    from threadwise.settings import Settings
    from threadwise.slack.app import SlackBot
    from threadwise.slack.settings import SlackSettings
    from threadwise.sync.admin import AdminService
    from threadwise.sync.scheduler import SyncScheduler
    from threadwise.teams.app import TeamsBot
    from threadwise.teams.settings import TeamsSettings

B = TypeVar("B", "SlackBot", "TeamsBot")
TEAMS_PORT = 3978  # the Bot Framework's customary port


@dataclass(frozen=True)
class Serving:
    """What `serve` was asked for: Slack's HTTP port (None: Socket Mode), Teams' port, the address, syncs."""

    http_port: int | None = None
    teams_port: int | None = None
    host: str = "0.0.0.0"
    sync: bool = True


class Root(Protocol):
    """What the front ends take from the composition root (`threadwise.wiring.Threadwise`)."""

    settings: Settings

    @property
    def conversations(self) -> ConversationService: ...
    @property
    def admin(self) -> AdminService: ...
    @property
    def gap_reports(self) -> GapReports: ...
    @property
    def scheduler(self) -> SyncScheduler: ...
    @property
    def confluence(self) -> ConfluenceClient | None: ...
    def warm_up(self) -> None: ...


class FrontEnds:
    def __init__(self, *, root: Root) -> None:
        self.root = root

    @cached_property
    def slack_settings(self) -> SlackSettings:
        from threadwise.slack.settings import SlackSettings

        return SlackSettings.from_env(self.root.settings.env)

    @cached_property
    def teams_settings(self) -> TeamsSettings:
        from threadwise.teams.settings import TeamsSettings

        return TeamsSettings.from_env(self.root.settings.env)

    def chosen(self, serving: Serving) -> tuple[bool, bool]:
        """(Slack, Teams): which front ends run; ValueError, saying what to set, when they cannot."""
        from threadwise.slack.serve import require_tokens

        slack, teams = self.slack_settings, self.teams_settings
        with_slack = bool(slack.bot_token or slack.app_token) or serving.http_port is not None
        with_teams = serving.teams_port is not None or teams.configured
        if not (with_slack or with_teams):
            raise ValueError(
                "nothing to serve: set SLACK_BOT_TOKEN and SLACK_APP_TOKEN for Slack, and/or TEAMS_CLIENT_ID, "
                "TEAMS_CLIENT_SECRET and TEAMS_TENANT_ID for Teams (see the README)"
            )
        if with_teams and teams.problem():
            raise ValueError(teams.problem())
        if with_slack:
            require_tokens(slack, http_port=serving.http_port)  # before anything is built or loaded
        return with_slack, with_teams

    def slack_bot(self, scheduler: SyncScheduler | None = None) -> SlackBot:
        """The Slack bot, with the admins' knowledge gaps; its weekly digest joins `scheduler`."""
        from threadwise.slack.app import build_slack_bot

        root = self.root
        bot = build_slack_bot(
            conversations=root.conversations,
            admin=root.admin,
            settings=self.slack_settings,
            gap_reports=root.gap_reports,
        )
        return _with_digest(bot, scheduler)

    def teams_bot(self, scheduler: SyncScheduler | None = None) -> TeamsBot:
        """The Teams bot, with the admins' knowledge gaps; its weekly digest joins `scheduler`."""
        from threadwise.teams.app import TeamsBot

        root = self.root
        bot = TeamsBot(
            conversations=root.conversations,
            admin=root.admin,
            settings=self.teams_settings,
            gap_reports=root.gap_reports,
        )
        return _with_digest(bot, scheduler)

    def serve(self, serving: Serving) -> None:
        """Run the chosen front ends and the scheduler until Ctrl-C or SIGTERM, in the order above."""
        from threadwise.slack.serve import serve as serve_slack

        with_slack, with_teams = self.chosen(serving)
        root = self.root
        scheduler = root.scheduler
        if serving.sync and root.confluence is None:
            print(
                "Confluence is not configured: no scheduled sync; answering from what is indexed.", flush=True
            )
        scheduler.syncing = serving.sync and root.confluence is not None
        with ExitStack() as stack:
            if with_teams:
                from threadwise.teams.serve import serve_teams

                root.warm_up()
                bot = self.teams_bot(scheduler)
                port = serving.teams_port or TEAMS_PORT
                drain_s = root.settings.drain_seconds
                stack.enter_context(serve_teams(bot, host=serving.host, port=port, drain_s=drain_s))
            if with_slack:
                warm_up = None if with_teams else root.warm_up
                serve_slack(
                    self.slack_bot(scheduler),
                    http_port=serving.http_port,
                    host=serving.host,
                    scheduler=scheduler,
                    warm_up=warm_up,
                    drain_s=root.settings.drain_seconds,
                )
            else:
                from threadwise.teams.serve import run_until_stopped

                run_until_stopped(scheduler)


def _with_digest(bot: B, scheduler: SyncScheduler | None) -> B:
    """`bot`, its weekly knowledge-gap digest (if it has the report) joined to `scheduler`."""
    if scheduler is not None and bot.gaps is not None:
        scheduler.digests.append(bot.gaps.post_digest)
    return bot
