"""Slack in Socket Mode, with each event kept before it is acknowledged, as HTTP mode keeps it.

Bolt's SocketModeHandler acknowledges an event over the WebSocket as soon as its listener is queued, and Slack
never sends an acknowledged event again: a replica that dies between that and its listener's claim would lose
the question. So each event that may be a question is first kept in the shared database (`keep_socket_event`),
until its listener is done with it; if its replica dies first, another replica's sweep replays it through its
own Bolt app (slack_handover). An event that cannot be kept (the database is away) is not acknowledged: Slack
sends it again, to this or another connection.
"""

from __future__ import annotations

import logging

from slack_bolt.adapter.socket_mode import SocketModeHandler
from slack_sdk.socket_mode.builtin import SocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest

from threadwise.chat.handover import ClaimKeeper
from threadwise.slack.app import SlackBot
from threadwise.slack.handover import keep_socket_event
from threadwise.slack.question import PLATFORM

log = logging.getLogger(__name__)


class KeepingSocketModeHandler(SocketModeHandler):
    """Bolt's built-in Socket Mode handler that keeps an Events API request in `claims` before acknowledging it."""

    def __init__(self, bot: SlackBot, *, claims: ClaimKeeper | None) -> None:
        super().__init__(bot.app, bot.settings.app_token)
        self.claims = claims

    def handle(self, client: SocketModeClient, req: SocketModeRequest) -> None:  # type: ignore[override]
        if self.claims is not None and req.type == "events_api":
            try:
                keep_socket_event(self.claims, PLATFORM, req.payload)
            except Exception as err:
                log.warning(
                    "could not keep Slack event %s (%s): not acknowledged, Slack sends it again",
                    req.envelope_id,
                    type(err).__name__,
                )
                return
        super().handle(client, req)


def socket_mode_handler(bot: SlackBot) -> KeepingSocketModeHandler:
    """The handler `serve` connects in Socket Mode (questions kept for other replicas when claims are on)."""
    return KeepingSocketModeHandler(bot, claims=bot.conversations.claims)
