"""What the Teams adapter reads from an incoming activity (where it happened, the question, the feedback
comment) and the door in front of the SDK that refuses what is not an activity."""

from __future__ import annotations

import hashlib
import html
import json
import logging
import re
import warnings
from dataclasses import dataclass
from typing import Any

from fastapi import Request, Response
from fastapi.responses import JSONResponse
from microsoft_teams.api.activities import ActivityTypeAdapter
from microsoft_teams.api.activities.utils import StripMentionsTextOptions, strip_mentions_text
from microsoft_teams.api.models.account import Account, ConversationAccount
from microsoft_teams.api.models.conversation.conversation_reference import ConversationReference
from microsoft_teams.api.models.entity.mention_entity import MentionEntity

from threadwise.db.conversations import ThreadKey

with warnings.catch_warnings():  # the SDK announces its preview features at import
    warnings.simplefilter("ignore")
    from microsoft_teams.apps import FastAPIAdapter
    from microsoft_teams.apps.http.adapter import HttpMethod, HttpRequest, HttpRouteHandler

log = logging.getLogger(__name__)

PLATFORM = "teams"
MAX_BODY = 1_000_000


@dataclass(frozen=True)
class Place:
    """Where an activity happened: the thread (conversation key), whom to send to, and who wrote."""

    key: ThreadKey  # (teams, tenant, channel or chat id, root message id or "" for a chat)
    conversation: str  # the conversation id to send into (a channel's is threaded: ";messageid=ROOT")
    service_url: str
    bot: Account
    kind: str  # "personal", "groupChat" or "channel"
    user: str  # the writer's Entra object id (aadObjectId), else their Teams id
    user_id: str = ""  # the writer's Teams id (29:…), what a new personal chat names

    @property
    def ref(self) -> ConversationReference:
        return ConversationReference(
            service_url=self.service_url,
            bot=self.bot,
            channel_id="msteams",
            conversation=ConversationAccount(id=self.conversation, conversation_type=self.kind),
        )


def place_of(activity: Any) -> Place:
    """The Place of an activity; a channel post that is not in a thread yet starts one (its own id)."""
    conversation = activity.conversation
    conv_id = str(conversation.id or "")
    base, _, root = conv_id.partition(";messageid=")
    # older Teams payloads (and the documented examples) leave conversationType out: a reply chain's id or
    # channel data naming a channel still says it is a channel, whose threads are conversations of their own
    channel_data = activity.channel_data
    in_channel = bool(root) or (
        channel_data is not None and getattr(channel_data, "channel", None) is not None
    )
    kind = str(conversation.conversation_type or ("channel" if in_channel else "personal"))
    if kind == "channel" and not root and str(activity.id or "").isdigit() and activity.type == "message":
        root, conv_id = str(activity.id), f"{base};messageid={activity.id}"
    tenant = conversation.tenant_id or (
        channel_data.tenant.id if channel_data is not None and channel_data.tenant is not None else ""
    )
    sender = activity.from_
    return Place(
        key=ThreadKey(PLATFORM, str(tenant or ""), base, root if kind == "channel" else ""),
        conversation=conv_id,
        service_url=str(activity.service_url or ""),
        bot=activity.recipient,
        kind=kind,
        user=str(sender.aad_object_id or sender.id or ""),
        user_id=str(sender.id or ""),
    )


def question_text(activity: Any) -> str:
    """The message without the bot's mention; other mentions keep their names; markup and entities undone."""
    text = strip_mentions_text(activity, StripMentionsTextOptions(account_id=activity.recipient.id)) or ""
    text = re.sub(r"<br\s*/?>|</p>", "\n", text)
    text = html.unescape(re.sub(r"<[^>]+>", "", text))
    return " ".join(text.split())


def mentions_someone_else(activity: Any) -> bool:
    return any(
        isinstance(e, MentionEntity) and e.mentioned.id != activity.recipient.id
        for e in activity.entities or []
    )


class ActivityEndpoint(FastAPIAdapter):
    """The SDK's FastAPI adapter, stricter at the door: a body that is too large, not JSON or not a Bot
    Framework activity gets 413/400 and one log line (the SDK would answer 500 and log a traceback); the
    SDK then checks the token (401) and routes the activity."""

    def register_route(self, method: HttpMethod, path: str, handler: HttpRouteHandler) -> None:
        async def route(request: Request) -> Response:
            if int(request.headers.get("content-length") or 0) > MAX_BODY:
                return JSONResponse({"error": "too large"}, status_code=413)
            try:
                body = json.loads(await request.body())
            except ValueError:
                log.info("refused a request to %s whose body is not JSON", path)
                return JSONResponse({"error": "the body is not JSON"}, status_code=400)
            if not isinstance(body, dict) or not is_activity(body):
                kind = body.get("type") if isinstance(body, dict) else type(body).__name__
                log.info("ignored a request that is not a Bot Framework activity (type %r)", kind)
                return JSONResponse({"error": "not a Bot Framework activity"}, status_code=400)
            result = await handler(HttpRequest(body=body, headers=dict(request.headers)))
            content = result.get("body")
            if content is None:
                return Response(status_code=result["status"])
            return JSONResponse(content=content, status_code=result["status"])

        self.app.post(path)(route)


def is_activity(body: dict[str, Any]) -> bool:
    try:
        ActivityTypeAdapter.validate_python(body)
        return True
    except ValueError:
        return False


def activity_key(place: Place, activity_id: str) -> str:
    """The claim for one activity: activity ids are unique within a conversation."""
    digest = hashlib.sha1(place.key.channel.encode()).hexdigest()[:16]
    return f"{digest}:{activity_id}"


def feedback_text(raw: str) -> str | None:
    """The comment from Teams' feedback form: `{"feedbackText": "…"}`, or None."""
    try:
        value = json.loads(raw) if raw else {}
    except ValueError:
        return raw.strip() or None
    text = value.get("feedbackText") if isinstance(value, dict) else None
    return str(text).strip() or None if text else None


def why_failed(err: Exception) -> str:
    response = getattr(err, "response", None)
    status = getattr(response, "status_code", None)
    return f"HTTP {status}" if status else f"{type(err).__name__}: {err}"
