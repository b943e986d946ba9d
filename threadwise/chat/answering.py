"""Answering one question in a thread, for every front end: the use case written once.

    ask (the channel's spaces, who asks) → the answer delivered in the thread (its message remembered for the
    buttons) → pages only the asker may read: told to them alone
    a failure → a friendly message in the thread instead, never silence

The front end supplies how to deliver (`Delivery`): Slack updates its placeholder, Teams sends a reply.
A delivery that also has `on_text` (`StreamedDelivery`) gets the answer's text as the language model writes
it, before `answer` (Slack streams it); an answer written whole (offline, not found) goes to `answer` alone.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from threadwise.chat.conversations import ConversationService
from threadwise.chat.markup import Markup
from threadwise.chat.turn_views import TurnView
from threadwise.db.conversations import ThreadKey
from threadwise.permissions import Asker
from threadwise.sync.admin import AdminService

log = logging.getLogger(__name__)

FAILED = "Sorry, I couldn't answer this time: something went wrong on my side. The error is logged; please try again."


def failed(markup: Markup) -> str:
    """What the asker reads when answering failed."""
    return f"{markup.icon('warning')} {FAILED}"


def empty_question(markup: Markup) -> str:
    """What someone who mentions the bot without a question reads."""
    example = markup.italic("@Threadwise how do I request a new laptop?")
    return (
        f"Hi! Ask me a question about your Confluence pages, for example {example} I'll answer in the thread."
    )


class Delivery(Protocol):
    """How a front end shows the outcome of one question in its thread."""

    def answer(self, turn: TurnView) -> str | None:
        """Show the answer; its message's id (for the buttons under it), or None when nothing could be shown."""
        ...

    def failure(self, text: str) -> None:
        """Show `text` instead of an answer."""
        ...

    def tell_asker(self, text: str) -> None:
        """Tell the asker alone."""
        ...


@runtime_checkable
class StreamedDelivery(Protocol):
    """A delivery that shows the answer while it is written: `on_text` gets each new piece (a delta) from the
    answering worker's thread; `answer` then shows the whole answer, as for any delivery."""

    def on_text(self, delta: str) -> None: ...


@dataclass(frozen=True)
class Asked:
    """A question to answer: where, what, who, and whether only the asker reads the conversation."""

    key: ThreadKey
    text: str
    user: str
    private: bool


def answer_in_thread(
    asked: Asked,
    *,
    conversations: ConversationService,
    admin: AdminService,
    asker: Asker,
    delivery: Delivery,
    markup: Markup,
    withheld_hint: str,
    thread_messages: Sequence[str] = (),
) -> TurnView | None:
    """Answer `asked` and deliver it; the answer, or None when answering failed (and the asker was told)."""
    try:
        spaces = admin.channel_spaces(asked.key.channel) or None
        turn = conversations.ask(
            asked.key,
            asked.text,
            user=asked.user,
            spaces=spaces,
            thread_messages=thread_messages,
            asker=asker,
            on_text=delivery.on_text if isinstance(delivery, StreamedDelivery) else None,
        )
    except Exception:
        log.exception("answering %r failed", asked.text)
        delivery.failure(failed(markup))
        return None
    ref = delivery.answer(turn)
    if ref is not None:
        conversations.set_message_ref(turn.turn_id, ref)
    if turn.withheld and not asked.private:  # pages only the asker may read: tell them alone
        delivery.tell_asker(withheld_hint)
    return turn
