"""Which Slack workspace and app this bot is installed as: requests of any other are acknowledged and dropped,
and users of other organisations (Slack Connect) are refused unless let in."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from slack_bolt import BoltResponse
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from threadwise.bot.slack_messenger import why

log = logging.getLogger(__name__)


class Installation:
    """The installed workspace (`team`) and app (`app`): configured, or learned at start."""

    def __init__(
        self, *, client: WebClient, team: str = "", app: str = "", allow_external_users: bool = False
    ):
        self.client = client
        self.team, self.app = team, app
        self.allow_external_users = allow_external_users

    def learn(self) -> None:
        """The workspace and app this bot is installed as (auth.test, bots.info), unless configured; events of
        any other are dropped. Best effort: without an answer only the configured ids are checked."""
        try:
            auth = self.client.auth_test()
            self.team = self.team or str(auth.get("team_id") or "")
            if not self.app and auth.get("bot_id"):
                bot = self.client.bots_info(bot=str(auth["bot_id"])).get("bot") or {}
                self.app = str(bot.get("app_id") or "")
        except SlackApiError as err:
            log.warning("could not learn the installed workspace and app: %s", why(err))

    def only_this(self, body: dict[str, Any], next: Callable[[], None]) -> BoltResponse | None:
        """Bolt middleware: requests of another workspace or app are acknowledged and dropped."""
        team = body.get("team_id") or (body["team"].get("id") if isinstance(body.get("team"), dict) else None)
        app = body.get("api_app_id")
        if (self.team and team and team != self.team) or (self.app and app and app != self.app):
            log.info("dropped a request of another workspace or app (%.20s, %.20s)", team, app)
            return BoltResponse(status=200, body="")
        next()
        return None

    def external(self, user_team: Any) -> bool:
        """True for a user of another organisation (Slack Connect) when they are not let in."""
        return bool(
            not self.allow_external_users
            and self.team
            and isinstance(user_team, str)
            and user_team
            and user_team != self.team
        )
