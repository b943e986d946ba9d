"""Which Slack workspace and app this bot is installed as: requests of any other are acknowledged and dropped,
and users of other organisations (Slack Connect) are refused unless let in."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from slack_bolt import BoltResponse
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from threadwise.slack.messenger import why
from threadwise.slack.question import installed_in, of_another_organisation

log = logging.getLogger(__name__)


class Installation:
    """The installed workspace (`team`), its Enterprise Grid organisation if any (`enterprise`) and app (`app`):
    configured, or learned at start; each event also names its installation in `authorizations`."""

    def __init__(
        self, *, client: WebClient, team: str = "", app: str = "", allow_external_users: bool = False
    ):
        self.client = client
        self.team, self.app, self.enterprise = team, app, ""
        self.allow_external_users = allow_external_users

    def learn(self) -> None:
        """The workspace and app this bot is installed as (auth.test, bots.info), unless configured; events of
        any other are dropped. Best effort: without an answer only the configured ids are checked."""
        try:
            auth = self.client.auth_test()
            self.team = self.team or str(auth.get("team_id") or "")
            self.enterprise = str(auth.get("enterprise_id") or "")
            self.app = self.app or str(auth.get("app_id") or "")
            if not self.app and auth.get("bot_id"):
                bot = self.client.bots_info(bot=str(auth["bot_id"])).get("bot") or {}
                self.app = str(bot.get("app_id") or "")
        except SlackApiError as err:
            log.warning("could not learn the installed workspace and app: %s", why(err))

    def only_this(self, body: dict[str, Any], next: Callable[[], None]) -> BoltResponse | None:
        """Bolt middleware: requests of another workspace or app are acknowledged and dropped. An event names
        the installation it is delivered for in `authorizations` (a Slack Connect event's own `team_id` may be
        the other organisation's); interactions and commands name the workspace in `team` / `team_id`."""
        installed_team, installed_enterprise = installed_in(body)
        team = body.get("team_id") or (body["team"].get("id") if isinstance(body.get("team"), dict) else None)
        app = body.get("api_app_id")
        if installed_team or installed_enterprise:
            ours = self._ours(installed_team, installed_enterprise)
        else:
            ours = not self.team or not team or team == self.team
        if not ours or (self.app and app and app != self.app):
            log.info("dropped a request of another workspace or app (%.20s, %.20s)", team, app)
            return BoltResponse(status=200, body="")
        next()
        return None

    def _ours(self, team: str, enterprise: str) -> bool:
        """A workspace install is ours by its team, an org-wide one (no team) by its organisation."""
        if team:
            return not self.team or team == self.team
        return not self.enterprise or enterprise == self.enterprise

    def external(self, body: dict[str, Any], event: dict[str, Any]) -> bool:
        """True for the author of `event` when they are of another organisation (Slack Connect) and not let
        in (THREADWISE_SLACK_ALLOW_EXTERNAL_USERS)."""
        if self.allow_external_users:
            return False
        return of_another_organisation(body, event, home=(self.team, self.enterprise))

    def presser_external(self, body: dict[str, Any]) -> bool:
        """True for who pressed a button when they are of another organisation and not let in: a block_actions
        payload names the presser's workspace (or Grid organisation) in `user.team_id` and carries no
        `is_ext_shared_channel`, so a team that is not ours decides."""
        user = body.get("user")
        team = user.get("team_id") if isinstance(user, dict) else None
        return self.external({}, {"user_team": team if isinstance(team, str) else ""})
