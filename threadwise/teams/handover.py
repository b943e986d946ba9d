"""Teams' side of the hand-over between replicas: what a claimed question keeps, and how a survivor answers it.

A question claimed from an activity keeps the conversation reference Bot Framework proactive messaging needs
(service URL, conversation id — a channel's carries ";messageid=ROOT", so a send lands in the thread — and
the bot's account), the tenant, who asked, the question and the activity it came in. A replica that adopts
the claim after its holder died sends the answer into that conversation the way the SDK's `App.send` does
(`send_or_update_activity` over the stored reference): the conversation need not have written to this
replica, or at all since. Teams shows a typing indicator, not a placeholder message, while a question is
answered, so a dead replica leaves nothing in the conversation to clean up.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from microsoft_teams.api.models.conversation.conversation_reference import ConversationReference

from threadwise.chat.handover import continue_claim
from threadwise.db.claims import Claim
from threadwise.db.conversations import ThreadKey
from threadwise.teams.activity import PLATFORM, Place


def resume_payload(place: Place, text: str, activity_id: str, *, quiet: bool = False) -> dict[str, Any]:
    """What another replica needs to answer `text`, asked in `place` by the activity `activity_id`. `quiet`:
    seen by a help-desk channel's auto mode (no mention), so nothing but an answer may be posted there."""
    return {
        "reference": place.ref.model_dump(mode="json", by_alias=True, exclude_none=True),
        "tenant": place.key.workspace,
        "channel": place.key.channel,
        "thread": place.key.thread,
        "user": place.user,
        "user_id": place.user_id,
        "text": text,
        "activity_id": activity_id,
        "quiet": quiet,
    }


def place_of_claim(payload: dict[str, Any]) -> Place:
    """The Place a claimed question was asked in, from its stored conversation reference."""
    ref = ConversationReference.model_validate(payload["reference"])
    return Place(
        key=ThreadKey(PLATFORM, payload["tenant"], payload["channel"], payload["thread"]),
        conversation=ref.conversation.id,
        service_url=ref.service_url,
        bot=ref.bot,
        kind=str(ref.conversation.conversation_type or "personal"),
        user=payload["user"],
        user_id=payload.get("user_id", ""),
    )


def resume_teams(
    claim: Claim,
    give_up: bool,
    *,
    answer: Callable[[Place, str, str], object],
    tell: Callable[[Place, str], object],
    finish: Callable[[str], None],
) -> None:
    """Answer the claimed question in its conversation (`answer(place, text, claim key)`, which finishes the
    claim), or `tell` the conversation it was interrupted and `finish` the claim."""
    place = place_of_claim(claim.payload)
    text = str(claim.payload["text"])
    continue_claim(
        claim,
        give_up,
        answer=lambda: answer(place, text, claim.key),
        tell=lambda notice: tell(place, notice),
        finish=finish,
    )
