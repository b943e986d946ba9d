"""Help-desk channels in Teams (issue 30): auto answers, private first, and the channel's experts.

- auto (`admin auto on`): a top-level channel post that `is_question` is answered in a thread under it without
  a mention; chit-chat and statements get nothing, and an answer the wiki does not hold stays unposted (the
  asker alone hears so, in their personal chat).
- private first (`admin private on`): the answer goes to the asker's personal chat with the bot, with a link
  back to the thread and Share to channel / Keep to myself. Share posts the same answer (sources, Explain,
  👍/👎) in the thread under "Shared by <name>"; nothing in the channel holds the answer before that.
- experts (`admin experts @A @B`): a "not found" answer, and an answer someone voted 👎 on, offer Still need
  help?; pressing it posts in the thread a message that mentions each expert (Teams mention entities; a tag
  is mentioned as a tag) and the person who still needs help, with the question and what was tried, and
  Mark resolved, which closes it once.

Share, Keep and Still need help are pressed in the asker's personal chat, while the answer belongs to the
channel thread, so `pressed_turn`'s "this conversation" cannot be the conversation of the press. A press
from a personal chat is honoured only for the asker's own answer given in a channel thread (the turn's
stored `asked_by` is the presser's Entra id, which Teams sets and the client cannot choose), and then goes
through `pressed_turn` with that thread as the conversation (so `may_see` is asked too). Another user's
turn id, or one from another personal chat or group chat, is refused with the same text as any unknown id.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote

from microsoft_teams.api.activities.message.message import MessageActivityInput
from microsoft_teams.api.models.account import Account
from microsoft_teams.api.models.attachment.attachment import Attachment
from microsoft_teams.api.models.entity.mention_entity import MentionEntity

from threadwise.chat.conversations import ConversationService, TurnView
from threadwise.chat.help_desk import (
    KEEP,
    MARK_RESOLVED,
    NOT_FOUND_PRIVATELY,
    SHARE,
    STILL_NEED_HELP,
    escalation_text,
    shared_by,
    stays_quiet,
)
from threadwise.chat.pressed import NOT_HERE, Pressed, turn_number
from threadwise.db.channel_modes import ChannelMode, Expert
from threadwise.db.conversations import ThreadKey
from threadwise.teams import cards
from threadwise.teams.activity import Place
from threadwise.teams.admin import TEAMS, paragraphs
from threadwise.teams.identity import PERSONAL
from threadwise.teams.messenger import TeamsMessenger

log = logging.getLogger(__name__)

SHARE_VERB = "share"  # Action.Execute verbs of the help desk
KEEP_VERB = "keep"
ESCALATE = "escalate"
RESOLVE = "resolve"
VERBS = (SHARE_VERB, KEEP_VERB, ESCALATE, RESOLVE)
UNREACHABLE = (
    "I answer here in a personal chat first, but Teams would not let me open one with you. "
    "Add Threadwise as a personal app (Apps → Threadwise → Add) and ask again."
)
DEEP_LINK = (
    "https://teams.microsoft.com/l/message/{channel}/{message}?tenantId={tenant}&parentMessageId={message}"
)


# -- reading the activity ---------------------------------------------------------------------------------


def is_top_level(place: Place, activity: Any) -> bool:
    """A new channel post (the root of its own thread), not a reply in a thread."""
    return place.kind == "channel" and place.key.thread == str(activity.id or "") and not activity.reply_to_id


def command_mentions(activity: Any) -> list[Expert]:
    """The people and tags an admin command mentions (the bot itself left out): Teams' mention entities,
    never names typed as text. A mention whose account is a tag (`type: "tag"`) is a group."""
    found: list[Expert] = []
    for entity in activity.entities or []:
        if not isinstance(entity, MentionEntity) or entity.mentioned.id == activity.recipient.id:
            continue
        who = entity.mentioned
        name = str(who.name or "")
        found.append(
            Expert("group", str(who.id), name) if who.type == "tag" else Expert("user", str(who.id), name)
        )
    return found


def thread_place(place: Place, key: ThreadKey) -> Place:
    """Where to post in the channel thread `key`, for a press that came from elsewhere (a personal chat)."""
    return replace(place, key=key, conversation=f"{key.channel};messageid={key.thread}", kind="channel")


def thread_link(key: ThreadKey) -> str:
    """A Teams deep link to the thread's root post (channel id, message id and tenant, as documented)."""
    return DEEP_LINK.format(
        channel=quote(key.channel, safe=""), message=quote(key.thread), tenant=key.workspace
    )


# -- what is shown -------------------------------------------------------------------------------------------


def _action(title: str, verb: str, data: dict[str, Any]) -> dict[str, Any]:
    return {"type": "Action.Execute", "title": title, "verb": verb, "data": data}


def escalate_action(turn_id: int) -> dict[str, Any]:
    return _action("🙋 " + STILL_NEED_HELP, ESCALATE, {"turn_id": turn_id})


def private_card(turn: TurnView, *, buttons: bool, escalate: bool, note: str = "") -> cards.Card:
    """The card under a private answer: its sources, and Share / Keep (and Still need help) while undecided."""
    card = cards.answer_card(turn, note=note)
    card.pop("actions", None)  # Explain and follow-ups belong to the thread's copy
    actions = []
    if buttons and not (turn.error or turn.not_found):
        actions += [
            _action("📣 " + SHARE, SHARE_VERB, {"turn_id": turn.turn_id}),
            _action("🔒 " + KEEP, KEEP_VERB, {"turn_id": turn.turn_id}),
        ]
    if escalate:
        actions.append(escalate_action(turn.turn_id))
    if actions:
        card["actions"] = actions
    return card


def private_answer(turn: TurnView, *, key: ThreadKey, escalate: bool) -> MessageActivityInput:
    """The answer for the asker alone: text, citations, the AI label, a link back to the thread, the card."""
    text = cards.answer_text(turn) + f"\n\n[Your question in the channel]({thread_link(key)})"
    message = MessageActivityInput(text=text, text_format="markdown").add_ai_generated()
    cards.add_citations(message, turn)
    card = private_card(turn, buttons=True, escalate=escalate)
    return message.add_attachments(Attachment(content_type=cards.CARD_TYPE, content=card))


def shared_answer(turn: TurnView, name: str) -> MessageActivityInput:
    """The answer as the thread shows it (sources, Explain, 👍/👎), under "Shared by <name>"."""
    message = cards.answer_activity(turn)
    message.text = f"{shared_by(name, TEAMS)}\n\n{message.text}"
    return message


def with_escalation(message: MessageActivityInput, turn: TurnView) -> MessageActivityInput:
    """`message` (an answer) with Still need help? among its card's actions (a card of its own if it has none)."""
    for attachment in message.attachments or []:
        if attachment.content_type == cards.CARD_TYPE and isinstance(attachment.content, dict):
            actions = [a for a in attachment.content.get("actions", []) if a.get("verb") != ESCALATE]
            attachment.content["actions"] = [*actions, escalate_action(turn.turn_id)]
            return message
    card = cards._card([], [escalate_action(turn.turn_id)])
    return message.add_attachments(Attachment(content_type=cards.CARD_TYPE, content=card))


def not_found_privately(turn: TurnView, *, key: ThreadKey, escalate: bool) -> MessageActivityInput:
    text = f"{NOT_FOUND_PRIVATELY}\n\n[Your question in the channel]({thread_link(key)})"
    message = MessageActivityInput(text=text, text_format="markdown")
    return with_escalation(message, turn) if escalate else message


def mention_of(account: Account) -> tuple[str, MentionEntity]:
    text = f"<at>{cards.escape(account.name or account.id)}</at>"
    return text, MentionEntity(mentioned=account, text=text)


def escalation_message(
    *, turn: TurnView, experts: tuple[Expert, ...], asker: Account, escalation_id: int
) -> MessageActivityInput:
    """The call for help in the thread: a mention entity per expert (a tag as a tag) and one for the asker."""
    accounts = [
        Account(id=e.id, name=e.name or e.id, type="tag" if e.kind == "group" else "person") for e in experts
    ]
    mentioned = [mention_of(a) for a in accounts]
    asker_text, asker_entity = mention_of(asker)
    text = escalation_text(
        question=turn.question,
        asker=asker_text,
        experts=experts,
        turn=turn,
        markup=TEAMS,
        mention=", ".join(t for t, _ in mentioned),
    )
    message = MessageActivityInput(text=paragraphs(text), text_format="markdown")
    for _, entity in [*mentioned, (asker_text, asker_entity)]:
        message.add_entity(entity)
    card = cards._card([], [_action("✅ " + MARK_RESOLVED, RESOLVE, {"escalation_id": escalation_id})])
    return message.add_attachments(Attachment(content_type=cards.CARD_TYPE, content=card))


def resolved_card(name: str) -> cards.Card:
    return cards._card([cards._text_block(f"✅ Resolved by {cards.escape(name)}.", isSubtle=True)], [])


# -- the asker's own answer, pressed in their personal chat -------------------------------------------------


def own_turn(
    conversations: ConversationService, place: Place, value: object, *, pressed: Any
) -> tuple[Pressed, ThreadKey | None]:
    """The answer a press names and the thread it belongs to. In a channel or group chat: `pressed` (the
    usual check, this conversation). In a personal chat: only the presser's own answer given in a channel
    thread, then the usual check with that thread as the conversation."""
    if place.kind != PERSONAL:
        result = pressed(place, value)
        return result, place.key if result.turn is not None else None
    number = turn_number(value)
    stored = conversations.store.turn(number) if number else None
    key = conversations.store.conversation_key(stored.conversation_id) if stored is not None else None
    if stored is None or key is None or stored.asked_by != place.user or not key.thread:
        log.info(
            "%s pressed a private-answer button naming no answer of theirs (%.24r): refused",
            place.user,
            value,
        )
        return Pressed(None, NOT_HERE), None
    return pressed(replace(place, key=key), value), key


# -- deliveries --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HelpDeskDelivery:
    """An answer in a help-desk channel: to the asker alone first (`mode.private`), unposted when auto mode
    found nothing (`quiet`), with Still need help? where the channel has experts."""

    messenger: TeamsMessenger
    place: Place
    mode: ChannelMode
    quiet: bool  # answered because auto mode saw a question (no mention): "not found" stays unposted

    @property
    def escalates(self) -> bool:
        return bool(self.mode.experts)

    def answer(self, turn: TurnView) -> str | None:
        if self.quiet and stays_quiet(turn):
            escalate = self.escalates and not turn.error
            self.messenger.send_privately(
                self.place, not_found_privately(turn, key=self.place.key, escalate=escalate)
            )
            return None
        if self.mode.private:
            escalate = self.escalates and turn.not_found
            sent = self.messenger.send_privately(
                self.place, private_answer(turn, key=self.place.key, escalate=escalate)
            )
            if sent is None and not self.quiet:  # never silence, and never the answer in public
                self.messenger.send(self.place, cards.notice(UNREACHABLE))
            return None  # the thread's message is the shared one, remembered when shared
        message = cards.answer_activity(turn)
        if self.escalates and turn.not_found:
            message = with_escalation(message, turn)
        sent = self.messenger.send(self.place, message)
        if sent is None:
            sent = self.messenger.send(self.place, cards.notice(cards.answer_text(turn)))
        return sent

    def failure(self, text: str) -> None:
        if self.quiet or self.mode.private:
            self.messenger.tell_privately(self.place, text)
        else:
            self.messenger.send(self.place, cards.notice(text))

    def tell_asker(self, text: str) -> None:
        self.messenger.tell_privately(self.place, text)
