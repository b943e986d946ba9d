"""Sending to Teams from worker threads: into a conversation (or updating an activity there), privately.

The Teams SDK's client lives on the server's event loop, so a worker hands each send to that loop and waits.
A refused send is logged and reported as None, never raised into a worker. The answering code and the
hand-over between replicas share one `TeamsMessenger`, as Slack's side shares its SlackMessenger.
"""

from __future__ import annotations

import asyncio
import logging
import warnings
from collections.abc import Coroutine
from dataclasses import replace
from typing import Any, TypeVar

from microsoft_teams.api.activities import ActivityParams

from threadwise.teams import cards
from threadwise.teams.activity import Place, why_failed
from threadwise.teams.identity import PERSONAL, personal_chat

with warnings.catch_warnings():  # the SDK announces its preview features at import
    warnings.simplefilter("ignore")
    from microsoft_teams.apps import App
    from microsoft_teams.apps.activity_send import send_or_update_activity

log = logging.getLogger(__name__)

SEND_TIMEOUT = 30.0
T = TypeVar("T")


class TeamsMessenger:
    """Sends through `app`'s API client on the server's loop (`loop`, set once the server runs)."""

    def __init__(self, *, app: App) -> None:
        self.app = app
        self.loop: asyncio.AbstractEventLoop | None = None

    def on_loop(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run `coro` on the server's event loop from a worker thread, and wait for it."""
        assert self.loop is not None, "the Teams server is not running"
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(SEND_TIMEOUT)

    async def send_async(self, place: Place, activity: ActivityParams) -> str | None:
        """Send into the place's conversation (or update `activity.id` there) through its conversation
        reference, as the SDK's proactive `App.send` does; the activity id, None when the connector refused
        (logged)."""
        try:
            sent = await send_or_update_activity(self.app.api, activity, place.ref)
            return str(sent.id) if sent.id else None
        except Exception as err:
            log.error("sending to Teams conversation %s failed: %s", place.conversation, why_failed(err))
            return None

    def send(self, place: Place, activity: ActivityParams) -> str | None:
        return self.on_loop(self.send_async(place, activity))

    def tell_privately(self, place: Place, text: str) -> None:
        """A note for the writer alone, in their personal chat with the bot (logged when Teams refuses)."""
        self.send_privately(place, cards.notice(text))

    def send_privately(self, place: Place, activity: ActivityParams) -> str | None:
        """Send `activity` to the writer alone, in their personal chat with the bot (created when there is
        none yet); its id, None when Teams refused (logged)."""
        try:
            chat = self.on_loop(personal_chat(self.app.api, place))
        except Exception as err:
            log.warning("could not open a personal chat with %s: %s", place.user, why_failed(err))
            return None
        return self.send(replace(place, conversation=chat, kind=PERSONAL), activity)
