"""Bot Framework activities as Teams sends them, and a sender that POSTs them to the bot's /api/messages.

The shapes follow what Teams delivers and Microsoft documents (tests/fixtures/bot_framework/ holds the
documented examples, SOURCES.md says where from): a channel message's conversation id carries
";messageid=ROOT", a mention is `<at>Name</at>` in the text plus a `mention` entity, users have an
`aadObjectId`, an `Action.Execute` press is an `adaptiveCard/action` invoke carrying a copy of the action
(its `id` too) and `trigger: manual`, the bot's arrival names the bot and the user who added it, and
`serviceUrl` points at the connector the bot must answer through (here the FakeBotConnector).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any

import httpx

BOT_ID = "28:threadwise-bot"
BOT_NAME = "Threadwise"
TENANT = "tenant-0001"
CHANNEL = "19:general0001@thread.tacv2"
GROUP_CHAT = "19:groupchat0001@thread.v2"
PERSONAL = "a:1personal-chat-0001"
ALICE = {"id": "29:alice", "name": "Alice Jones", "aadObjectId": "aad-alice"}
ADMIN = {"id": "29:admin", "name": "Ada Admin", "aadObjectId": "aad-admin"}


@dataclass
class TeamsSender:
    """Builds activities for one bot and POSTs them; ids count up like Teams message ids."""

    url: str  # the bot's /api/messages
    service_url: str  # the connector the bot replies through
    token: str | None = None  # "Bearer …" is added when set
    ids: itertools.count = field(default_factory=lambda: itertools.count(1_600_000_000_001))
    client: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=30))  # one, kept alive

    def next_id(self) -> str:
        return str(next(self.ids))

    def _base(self, conversation: dict[str, Any], user: dict[str, Any], **extra: Any) -> dict[str, Any]:
        return {
            "channelId": "msteams",
            "serviceUrl": self.service_url,
            "from": user,
            "recipient": {"id": BOT_ID, "name": BOT_NAME},
            "conversation": {"tenantId": TENANT, **conversation},
            "channelData": {"tenant": {"id": TENANT}},
            "timestamp": "2026-11-23T10:00:00.000Z",
            "locale": "en-US",
            **extra,
        }

    def message(
        self,
        text: str,
        *,
        where: str = "channel",
        mention: bool = True,
        root: str | None = None,
        user: dict[str, Any] = ALICE,
        activity_id: str | None = None,
        mention_other: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A message: in a channel (a new post, or a reply in thread `root`), a group chat, or a personal chat."""
        activity_id = activity_id or self.next_id()
        entities: list[dict[str, Any]] = []
        if mention:
            text = f"<at>{BOT_NAME}</at> {text}"
            entities.append(
                {
                    "type": "mention",
                    "text": f"<at>{BOT_NAME}</at>",
                    "mentioned": {"id": BOT_ID, "name": BOT_NAME},
                }
            )
        if mention_other is not None:
            text = f"<at>{mention_other['name']}</at> {text}"
            entities.append(
                {"type": "mention", "text": f"<at>{mention_other['name']}</at>", "mentioned": mention_other}
            )
        if where == "channel":
            conversation = {
                "id": f"{CHANNEL};messageid={root or activity_id}",
                "conversationType": "channel",
                "isGroup": True,
            }
        elif where == "group":
            conversation = {"id": GROUP_CHAT, "conversationType": "groupChat", "isGroup": True}
        else:
            conversation = {"id": PERSONAL, "conversationType": "personal"}
        activity = self._base(
            conversation, user, type="message", id=activity_id, text=text, entities=entities
        )
        if where == "channel":
            activity["channelData"] = {
                "tenant": {"id": TENANT},
                "team": {"id": "19:team0001@thread.tacv2"},
                "channel": {"id": CHANNEL},
            }
            if root:
                activity["replyToId"] = root
        return activity

    def card_action(
        self,
        verb: str,
        data: dict[str, Any],
        *,
        message_id: str,
        conversation: str,
        kind: str = "channel",
        user: dict[str, Any] = ALICE,
    ) -> dict[str, Any]:
        """The invoke Teams sends when someone presses an Adaptive Card `Action.Execute` button."""
        return self._base(
            {"id": conversation, "conversationType": kind},
            user,
            type="invoke",
            name="adaptiveCard/action",
            id=self.next_id(),
            replyToId=message_id,
            value={
                "action": {"type": "Action.Execute", "id": f"{verb}-action", "verb": verb, "data": data},
                "trigger": "manual",
            },
        )

    def explain(
        self, turn_id: int, *, message_id: str, conversation: str, kind: str, user: dict[str, Any] = ALICE
    ) -> dict[str, Any]:
        """A press of the Explain button."""
        return self.card_action(
            "explain",
            {"turn_id": turn_id},
            message_id=message_id,
            conversation=conversation,
            kind=kind,
            user=user,
        )

    def feedback(
        self,
        reaction: str,
        *,
        message_id: str,
        conversation: str,
        kind: str,
        comment: str = "",
        user: dict[str, Any] = ALICE,
    ) -> dict[str, Any]:
        """The invoke of Teams' native 👍/👎 buttons (and the optional text of its feedback form)."""
        return self._base(
            {"id": conversation, "conversationType": kind},
            user,
            type="invoke",
            name="message/submitAction",
            id=self.next_id(),
            replyToId=message_id,
            value={
                "actionName": "feedback",
                "actionValue": {"reaction": reaction, "feedback": json.dumps({"feedbackText": comment})},
            },
        )

    def bot_added(self, *, where: str = "personal") -> dict[str, Any]:
        conversation = (
            {"id": PERSONAL, "conversationType": "personal"}
            if where == "personal"
            else {"id": CHANNEL, "conversationType": "channel", "isGroup": True}
        )
        return self._base(
            conversation,
            ALICE,
            type="conversationUpdate",
            id=self.next_id(),
            membersAdded=[{"id": BOT_ID}, {"id": ALICE["id"], "aadObjectId": ALICE["aadObjectId"]}],
        )

    def post(self, activity: dict[str, Any] | str | bytes, *, token: str | None = None) -> httpx.Response:
        """POST an activity (or any body) to the bot as the Bot Framework would."""
        headers = {"Content-Type": "application/json"}
        bearer = token if token is not None else self.token
        if bearer:
            headers["Authorization"] = f"Bearer {bearer}"
        content = activity if isinstance(activity, str | bytes) else json.dumps(activity)
        return self.client.post(self.url, content=content, headers=headers)
