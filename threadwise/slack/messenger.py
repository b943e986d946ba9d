"""Sending to Slack: post in a thread, edit in place, deliver (edit, else post), privately, modals.

The app's answering and the action handlers (`slack_actions`) are both handed one `SlackMessenger`, so the
handlers need nothing from the app module, and a front end for another platform can mirror the shape.
A refused call is logged and reported as a value (None or False), never raised into a listener.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from threadwise.slack import blocks

log = logging.getLogger(__name__)


class SlackMessenger:
    """Posts, edits and delivers messages through one Web API client."""

    def __init__(self, *, client: WebClient) -> None:
        self.client = client

    def post(self, channel: str, thread_ts: str | None, message: blocks.Message) -> str | None:
        """Post in a thread; the message's ts, or None when Slack refused (logged)."""
        try:
            reply = self.client.chat_postMessage(channel=channel, thread_ts=thread_ts, **message)
            return str(reply["ts"])
        except SlackApiError as err:
            log.error("chat.postMessage in %s failed: %s", channel, why(err))
            return None

    def edit(
        self,
        channel: str,
        ts: str,
        message: blocks.Message,
        *,
        plainer: Callable[[], blocks.Message] | None = None,
    ) -> bool:
        """Replace the message `ts` in place (with `plainer()` if Slack refuses the blocks); False if it failed."""
        try:
            self.client.chat_update(channel=channel, ts=ts, **message)
            return True
        except SlackApiError as err:
            log.warning("chat.update of %s in %s failed: %s", ts, channel, why(err))
            if err.response.get("error") == "invalid_blocks" and plainer is not None:
                return self.edit(channel, ts, plainer())
            return False

    def deliver(
        self,
        channel: str,
        thread_ts: str | None,
        ts: str | None,
        message: blocks.Message,
        *,
        plainer: Callable[[], blocks.Message] | None = None,
    ) -> str | None:
        """Put `message` in place of the placeholder `ts`; if that is gone, post it in the thread instead.

        Returns the ts of the message that holds it, None only when Slack refused everything (logged).
        """
        if ts is not None and self.edit(channel, ts, message, plainer=plainer):
            return ts
        new_ts = self.post(channel, thread_ts, message)
        if new_ts is None and plainer is not None:
            new_ts = self.post(channel, thread_ts, plainer())
        return new_ts

    def find(self, channel: str, thread_ts: str, block_id: str, *, pages: int = 10) -> str | None:
        """The ts of the message in the thread that holds a block `block_id`; None when there is none or the
        thread cannot be read (logged)."""
        cursor = None
        for _ in range(pages):
            try:
                reply = self.client.conversations_replies(
                    channel=channel, ts=thread_ts, limit=200, cursor=cursor
                )
            except SlackApiError as err:
                log.info("could not read thread %s in %s: %s", thread_ts, channel, why(err))
                return None
            for message in reply.get("messages") or []:
                if any(b.get("block_id") == block_id for b in message.get("blocks") or []):
                    return str(message["ts"])
            cursor = (reply.get("response_metadata") or {}).get("next_cursor")
            if not reply.get("has_more") or not cursor:
                return None
        return None

    def ephemeral(self, channel: str, user: str, thread_ts: str | None, message: blocks.Message) -> None:
        """A message only `user` sees, in the thread."""
        try:
            self.client.chat_postEphemeral(channel=channel, user=user, thread_ts=thread_ts, **message)
        except SlackApiError as err:
            log.warning("chat.postEphemeral to %s failed: %s", user, why(err))

    def open_modal(self, trigger_id: str, view: dict[str, Any]) -> bool:
        """Open a modal for the user whose action gave `trigger_id`; False when Slack would not (logged)."""
        try:
            self.client.views_open(trigger_id=trigger_id, view=view)
            return True
        except SlackApiError as err:
            log.warning("views.open failed: %s", err.response.get("error"))
            return False


def why(err: SlackApiError) -> str:
    """Slack's error code and its details, for the log."""
    response = err.response
    details = response.get("response_metadata", {}).get("messages") if hasattr(response, "get") else None
    return f"{response.get('error')}{' ' + str(details) if details else ''}"
