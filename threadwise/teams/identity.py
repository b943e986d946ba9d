"""Who asks in Teams, whether anyone else sees the answer, and the personal chat for what only they may hear.

The asker's e-mail is the member's `email`, else their `userPrincipalName`, from the connector's member lookup
(`GET /v3/conversations/{conversation}/members/{member}`, the SDK's `get_member_by_id`): Teams sends neither
with a message. A personal chat with the bot is private; a group chat and a channel are not. A note for the
asker alone goes to their personal chat with the bot (`POST /v3/conversations`, which gives the existing
one-to-one conversation when there is one).
"""

from __future__ import annotations

from typing import Any

from microsoft_teams.api import ApiClient
from microsoft_teams.api.clients.conversation.params import CreateConversationParams
from microsoft_teams.api.models.account import Account

from threadwise.chat.identity import LookupFailed
from threadwise.teams.activity import Place, why_failed

PERSONAL = "personal"


def is_personal(place: Place) -> bool:
    """Whether only the asker and the bot see this conversation."""
    return place.kind == PERSONAL


def _api_for(api: ApiClient, place: Place) -> ApiClient:
    same = place.service_url.rstrip("/") == api.service_url
    return api if same or not place.service_url else api.clone(service_url=place.service_url)


async def member_email(api: ApiClient, place: Place) -> str | None:
    """The writer's e-mail or UPN as the conversation's member list has it; LookupFailed when Teams refuses."""
    try:
        member: Any = await _api_for(api, place).conversations.get_member_by_id(place.key.channel, place.user)
    except Exception as err:  # the SDK raises its HTTP client's errors; any of them means "unknown"
        raise LookupFailed(f"member lookup: {why_failed(err)}") from err
    return member.email or member.user_principal_name or None


async def personal_chat(api: ApiClient, place: Place) -> str:
    """The id of the writer's personal chat with the bot (created when there is none yet)."""
    params = CreateConversationParams(
        members=[Account(id=place.user_id or place.user)],
        tenant_id=place.key.workspace or None,
        channel_data={"tenant": {"id": place.key.workspace}} if place.key.workspace else None,
    )
    created = await _api_for(api, place).conversations.create(params)
    return str(created.id)
