"""Help-desk channels in Slack (issue 30): auto answers, private first, and calling the channel's experts in.

Admins set a channel's modes with `/threadwise auto|private on|off` and `/threadwise experts <mentions>`
(`threadwise.chat.channel_commands`); this module is what the modes change:

- auto: a top-level message that asks something (`help_desk.is_question`) is answered in a thread under it,
  without a mention, claimed once like a mention (team:channel:ts). Nothing is posted before the answer is
  known (the asker alone sees "Looking…"); a question the wiki does not answer, or a failure, posts nothing
  in the channel: the asker alone is told. In an auto channel a reply in a thread the bot answered in is a
  follow-up only when it asks something.
- private: the answer goes to the asker alone (chat.postEphemeral, in the thread) with Share to channel and
  Keep to myself. A press on an ephemeral message carries no `message`: the buttons name the answer (its
  turn id) and go through `pressed_turn` in the thread the payload's container names. Share posts the answer
  publicly in the thread ("Shared by <@U…>") and deletes the ephemeral through the action's response_url;
  Keep removes its buttons (replace_original).
- experts: a "not found" answer, and an answer someone voted 👎 (privately, to the voter), offer Still need
  help?; pressing it mentions exactly the channel's experts and the asker in the thread with the question and
  what was tried, once per thread while open, with Mark resolved. Mark resolved, or a ✅ reaction on that
  message, by anyone in the channel resolves it once. Without experts the button is not offered.

Questions in channels with any of these modes are answered here rather than by `SlackBot.start_answer`; they
are claimed without the question kept for a replica to resume (a resumed answer would be posted publicly).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Protocol

from slack_bolt import App
from slack_sdk import WebClient

from threadwise.chat.answering import Asked, answer_in_thread
from threadwise.chat.conversations import ConversationService
from threadwise.chat.help_desk import (
    KEEP,
    MARK_RESOLVED,
    NOT_FOUND_PRIVATELY,
    SHARE,
    STILL_NEED_HELP,
    escalation_text,
    is_question,
    shared_by,
    stays_quiet,
)
from threadwise.chat.identity import WITHHELD_HINT
from threadwise.chat.markup import escape, truncate
from threadwise.chat.pool import Admission
from threadwise.chat.pressed import pressed_turn
from threadwise.chat.turn_views import TurnView
from threadwise.db.channel_modes import ChannelMode, ChannelModes, Escalation
from threadwise.db.conversations import ThreadKey
from threadwise.slack import blocks
from threadwise.slack.handover import placeholder_ref
from threadwise.slack.identity import SlackAskers, is_direct_message
from threadwise.slack.messenger import SlackMessenger
from threadwise.slack.mrkdwn import SLACK
from threadwise.slack.question import PLATFORM, Question, refusal_of
from threadwise.slack.settings import SlackSettings
from threadwise.slack.thread import thread_context
from threadwise.sync.admin import AdminService


class SlackBot(Protocol):
    """What the help desk uses of `threadwise.slack.app.SlackBot` (not imported: app imports this module)."""

    admin: AdminService
    conversations: ConversationService
    messenger: SlackMessenger
    settings: SlackSettings
    askers: SlackAskers
    admission: Admission
    client: WebClient
    ready: threading.Event

    @property
    def waiting(self) -> int: ...

    def claim(self, key: str, resume: dict[str, Any] | None = None) -> bool: ...

    def finish_claim(self, claimed: str | None) -> None: ...

    def submit(self, job: Callable[[], None], what: str, *, owner: str = "") -> Future[None]: ...


log = logging.getLogger(__name__)

# action_ids
SHARE_ACTION = "help_share"
KEEP_ACTION = "help_keep"
ESCALATE_ACTION = "help_escalate"
RESOLVE_ACTION = "help_resolve"
RESOLVED_REACTION = "white_check_mark"

LOOKING = ":hourglass_flowing_sand: Looking through Confluence for your question… (only you see this)"
NO_EXPERTS = (
    "No experts are set for this channel, so there is nobody for me to call in. "
    "An admin can set them with `/threadwise experts @someone @some-group`."
)
ALREADY_CALLED = "The channel's experts were called in already in this thread; it is still open."
ALREADY_RESOLVED = "That request for help is resolved already."
NOT_THIS_THREAD = "That request for help belongs to another thread, so this button does nothing here."
ONLY_ASKER_SHARES = "Only the person who asked can share this answer."
SHARED_ALREADY = "That answer was shared already."
KEPT = "Kept to you. Nobody else sees this answer."


# -- Block Kit --------------------------------------------------------------------------------------------


def _without_explain(message: blocks.Message) -> list[blocks.Block]:
    """The answer's blocks less Explain (it posts in the thread: not for an answer only the asker sees)."""
    kept = []
    for block in message["blocks"]:
        if block.get("type") == "actions":
            elements = [e for e in block.get("elements", []) if e.get("action_id") != blocks.EXPLAIN]
            if not elements:
                continue
            block = {**block, "elements": elements}
        kept.append(block)
    return kept


def still_need_help_block(turn_id: int) -> blocks.Block:
    return {
        "type": "actions",
        "block_id": f"turn:{turn_id}:help",
        "elements": [blocks.button(f":sos: {STILL_NEED_HELP}", ESCALATE_ACTION, str(turn_id))],
    }


def public_answer(turn: TurnView, *, experts: bool, by: str = "") -> blocks.Message:
    """The answer in the thread as every channel shows it (Explain, 👍/👎), "Shared by" above it when `by`
    shared it, and Still need help? under a "not found" when the channel has experts."""
    message = blocks.answer_message(turn)
    extra = [blocks.context(shared_by(by, SLACK))] if by else []
    more = [still_need_help_block(turn.turn_id)] if experts and turn.not_found and not turn.error else []
    return {**message, "blocks": extra + message["blocks"] + more}


def private_answer(turn: TurnView, *, experts: bool, buttons: bool = True) -> blocks.Message:
    """The answer for the asker alone: as in the thread less Explain, with Share to channel / Keep to myself
    (`buttons`), or Still need help? for a "not found" (there is nothing to share)."""
    message = blocks.answer_message(turn)
    body = _without_explain(message)
    value = str(turn.turn_id)
    if not buttons:
        body = [b for b in body if b.get("type") == "section" or b.get("type") == "context"]
        body.append(blocks.context(f"_{KEPT}_"))
    elif turn.not_found or turn.error:
        if experts and not turn.error:
            body.append(still_need_help_block(turn.turn_id))
    else:
        body.append(
            {
                "type": "actions",
                "block_id": f"turn:{value}:share",
                "elements": [
                    blocks.button(f":mega: {SHARE}", SHARE_ACTION, value, style="primary"),
                    blocks.button(f":lock: {KEEP}", KEEP_ACTION, value),
                ],
            }
        )
    return {"text": message["text"], "blocks": body}


def not_found_privately(turn: TurnView, *, experts: bool) -> blocks.Message:
    body: list[blocks.Block] = [blocks.section(f":mag: {NOT_FOUND_PRIVATELY}")]
    if experts:
        body.append(still_need_help_block(turn.turn_id))
    return {"text": NOT_FOUND_PRIVATELY, "blocks": body}


def escalation_message(text: str, escalation_id: int) -> blocks.Message:
    return {
        "text": text.split("\n", 1)[0],
        "blocks": [
            blocks.section(text),
            {
                "type": "actions",
                "block_id": f"escalation:{escalation_id}",
                "elements": [
                    blocks.button(
                        f":white_check_mark: {MARK_RESOLVED}",
                        RESOLVE_ACTION,
                        str(escalation_id),
                        style="primary",
                    )
                ],
            },
        ],
    }


def resolved_message(question: str, asker: str, by: str) -> blocks.Message:
    text = f":white_check_mark: Resolved by <@{by}>: <@{asker}>'s question is settled."
    return {
        "text": text,
        "blocks": [blocks.section(text), blocks.context(f"> {escape(truncate(question, 500))}")],
    }


# -- where a press happened -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pressed:
    """A press as its payload tells it; on an ephemeral message there is no `message`: the container says."""

    user: str
    team: str
    channel: str
    message_ts: str
    thread_ts: str
    ephemeral: bool

    @classmethod
    def of(cls, body: dict[str, Any]) -> Pressed:
        container = body.get("container") or {}
        message = body.get("message") or {}
        message_ts = str(message.get("ts") or container.get("message_ts") or "")
        return cls(
            user=str((body.get("user") or {}).get("id", "")),
            team=str((body.get("team") or {}).get("id") or body.get("team_id") or ""),
            channel=str((body.get("channel") or {}).get("id") or container.get("channel_id") or ""),
            message_ts=message_ts,
            thread_ts=str(message.get("thread_ts") or container.get("thread_ts") or message_ts),
            ephemeral=bool(container.get("is_ephemeral")),
        )

    @property
    def key(self) -> ThreadKey:
        return ThreadKey(PLATFORM, self.team, self.channel, self.thread_ts)


# -- the flows --------------------------------------------------------------------------------------------


class SlackHelpDesk:
    """The help-desk modes for one `SlackBot` (its messenger, claims, pool and stores)."""

    def __init__(self, bot: SlackBot) -> None:
        self.bot = bot
        self._escalating = threading.Lock()

    @property
    def channels(self) -> ChannelModes:
        return self.bot.admin.channels

    def register(self, app: App) -> None:
        """The buttons and the ✅ reaction; registered before the app's catch-all listeners."""
        app.action(SHARE_ACTION)(self.on_share)
        app.action(KEEP_ACTION)(self.on_keep)
        app.action(ESCALATE_ACTION)(self.on_escalate)
        app.action(RESOLVE_ACTION)(self.on_resolve)
        app.event("reaction_added")(self.on_reaction)

    def mode(self, channel: str) -> ChannelMode:
        return self.channels.get(channel)

    # -- questions ----------------------------------------------------------------------------------------

    def top_level(self, question: Question, event: dict[str, Any], *, claim: str, bot_user: str) -> None:
        """A top-level channel message without the bot's mention: answered in auto channels if it asks."""
        if bot_user and f"<@{bot_user}" in str(event.get("text") or ""):
            return  # a mention: the app_mention event answers it
        if not is_question(question.text):
            return
        mode = self.mode(question.channel)
        if mode.auto:
            self.start(question, claim=claim, mode=mode, auto=True)

    def takes(self, question: Question, *, claim: str, follow_up: bool = False) -> bool:
        """Answer a mention (or a follow-up in a thread the bot answered in) here when the channel has a
        help-desk mode; False: the app answers it as usual."""
        if question.private or is_direct_message(question.channel):
            return False
        mode = self.mode(question.channel)
        if mode.is_default:
            return False
        auto = mode.auto and follow_up
        if auto and not is_question(question.text):
            return True  # people talking in the thread: not for the bot
        if not (auto or mode.private or mode.experts):
            return False
        self.start(question, claim=claim, mode=mode, auto=auto)
        return True

    def start(self, question: Question, *, claim: str, mode: ChannelMode, auto: bool) -> None:
        bot = self.bot
        if not bot.claim(claim):
            log.info("already answered %s (a retry or a duplicate event)", claim)
            return
        claimed = f"{PLATFORM}:{claim}"
        quiet = auto or mode.private  # nothing public before the answer is known (or ever, when private)
        submitted = False
        try:
            refusal = refusal_of(question, max_chars=bot.settings.max_question_chars)
            refusal = refusal or bot.admission.reserve(question.user)
            if refusal is not None:
                note = blocks.notice_message(refusal)
                if quiet:
                    bot.messenger.ephemeral(question.channel, question.user, question.thread_ts, note)
                else:
                    bot.messenger.post(question.channel, question.thread_ts, note)
                return
            try:
                placeholder_ts = None
                if quiet:
                    bot.messenger.ephemeral(
                        question.channel, question.user, question.thread_ts, blocks.notice_message(LOOKING)
                    )
                else:
                    placeholder = blocks.placeholder_message(
                        question.text, waiting=bot.waiting, ref=placeholder_ref(claimed)
                    )
                    placeholder_ts = bot.messenger.post(question.channel, question.thread_ts, placeholder)
                delivery = HelpDeskDelivery(self, question, mode, auto=auto, placeholder_ts=placeholder_ts)
                bot.submit(
                    lambda: self._answer(question, delivery, claimed), "answering", owner=question.user
                )
                submitted = True
            finally:
                bot.admission.release(question.user)
        finally:
            if not submitted:
                bot.finish_claim(claimed)

    def _answer(self, question: Question, delivery: HelpDeskDelivery, claimed: str) -> None:
        bot = self.bot
        try:
            bot.ready.wait()
            answer_in_thread(
                Asked(key=question.key, text=question.text, user=question.user, private=False),
                conversations=bot.conversations,
                admin=bot.admin,
                asker=bot.askers.asker(question.user, private=False),  # what everyone in the channel may read
                delivery=delivery,
                markup=SLACK,
                withheld_hint=WITHHELD_HINT,
                thread_messages=thread_context(bot.client, bot.conversations, question),
            )
        finally:
            bot.finish_claim(claimed)

    # -- pressed buttons ----------------------------------------------------------------------------------

    def _turn(self, where: Pressed, value: object) -> TurnView | None:
        """The answer a press names, when it is this thread's and the presser may see it (`pressed_turn`)."""
        if not (where.user and where.channel and where.message_ts):
            log.info("ignored a press that does not say where it happened")
            return None
        pressed = pressed_turn(
            self.bot.conversations,
            value,
            key=where.key,
            may_see=lambda turn: self.bot.askers.may_see(where.user, where.channel, turn),
            user=where.user,
        )
        if pressed.turn is None and pressed.refusal:
            self._tell(where, pressed.refusal)
        return pressed.turn

    def _tell(self, where: Pressed, text: str) -> None:
        self.bot.messenger.ephemeral(where.channel, where.user, where.thread_ts, blocks.notice_message(text))

    def _asked_by(self, turn: TurnView) -> str:
        stored = self.bot.conversations.store.turn(turn.turn_id)
        return str(stored.asked_by) if stored is not None else ""

    def on_share(self, ack: Any, body: dict[str, Any], action: dict[str, Any], respond: Any) -> None:
        ack()
        where = Pressed.of(body)
        turn = self._turn(where, action.get("value"))
        if turn is None:
            return
        if self._asked_by(turn) != where.user:
            self._tell(where, ONLY_ASKER_SHARES)
            return
        if not self.bot.claim(f"share:{turn.turn_id}"):
            self._tell(where, SHARED_ALREADY)
            return
        experts = bool(self.mode(where.channel).experts)
        message = public_answer(turn, experts=experts, by=where.user)
        ts = self.bot.messenger.post(where.channel, where.thread_ts, message)
        if ts is not None:
            self.bot.conversations.set_message_ref(turn.turn_id, ts)
        if where.ephemeral:
            respond(delete_original=True)

    def on_keep(self, ack: Any, body: dict[str, Any], action: dict[str, Any], respond: Any) -> None:
        ack()
        where = Pressed.of(body)
        turn = self._turn(where, action.get("value"))
        if turn is None or not where.ephemeral:
            return
        message = private_answer(turn, experts=False, buttons=False)
        respond(replace_original=True, text=message["text"], blocks=message["blocks"])

    def on_escalate(self, ack: Any, body: dict[str, Any], action: dict[str, Any], respond: Any) -> None:
        ack()
        where = Pressed.of(body)
        turn = self._turn(where, action.get("value"))
        if turn is None:
            return
        mode = self.mode(where.channel)
        if not mode.experts:
            self._tell(where, NO_EXPERTS)
            return
        asker = self._asked_by(turn) or where.user
        with self._escalating:  # one ping per thread while it is open (two presses at once: one)
            if self.channels.open_escalation(channel=where.channel, thread=where.thread_ts) is not None:
                self._tell(where, ALREADY_CALLED)
                return
            escalation = self.channels.escalate(
                platform=PLATFORM,
                channel=where.channel,
                thread=where.thread_ts,
                turn_id=turn.turn_id,
                asker=asker,
                question=turn.question,
                opened_by=where.user,
            )
        text = escalation_text(
            question=turn.question, asker=asker, experts=mode.experts, turn=turn, markup=SLACK
        )
        ts = self.bot.messenger.post(where.channel, where.thread_ts, escalation_message(text, escalation))
        if ts is not None:
            self.channels.note_message(escalation, ts)
        if where.ephemeral:
            respond(replace_original=True, text="I called the channel's experts in, in the thread.")

    def on_resolve(self, ack: Any, body: dict[str, Any], action: dict[str, Any]) -> None:
        ack()
        where = Pressed.of(body)
        value = str(action.get("value") or "")
        escalation = self.channels.get_escalation(int(value)) if value.isdigit() and len(value) < 19 else None
        if escalation is None or (escalation.channel, escalation.thread) != (where.channel, where.thread_ts):
            self._tell(where, NOT_THIS_THREAD)
            return
        self._resolve(escalation, by=where.user, where=where)

    def on_reaction(self, event: dict[str, Any]) -> None:
        item = event.get("item") or {}
        if event.get("reaction") != RESOLVED_REACTION or item.get("type") != "message":
            return
        channel, ts, user = str(item.get("channel") or ""), str(item.get("ts") or ""), event.get("user")
        if not (channel and ts and isinstance(user, str) and user):
            return
        escalation = self.channels.by_message(channel, ts)
        if escalation is not None:
            self._resolve(escalation, by=user, where=None)

    def _resolve(self, escalation: Escalation, *, by: str, where: Pressed | None) -> None:
        if not self.channels.resolve(escalation.id, by=by):
            if where is not None:
                self._tell(where, ALREADY_RESOLVED)
            return
        log.info("escalation %s resolved by %s", escalation.id, by)
        if escalation.message_ref:
            self.bot.messenger.edit(
                escalation.channel,
                escalation.message_ref,
                resolved_message(escalation.question, escalation.asker, by),
            )

    # -- after a 👎 ----------------------------------------------------------------------------------------

    def down_voted(self, channel: str, user: str, thread_ts: str, turn: TurnView) -> None:
        """Offer Still need help? to whoever voted an answer down, privately, where the channel has experts."""
        if is_direct_message(channel) or not self.mode(channel).experts:
            return
        if self.channels.open_escalation(channel=channel, thread=thread_ts) is not None:
            return
        text = "Sorry that didn't help. Want a person to look at it?"
        message = {"text": text, "blocks": [blocks.section(text), still_need_help_block(turn.turn_id)]}
        self.bot.messenger.ephemeral(channel, user, thread_ts, message)


@dataclass(frozen=True)
class HelpDeskDelivery:
    """How an answer in a help-desk channel is shown (`chat.answering.Delivery`)."""

    desk: SlackHelpDesk
    question: Question
    mode: ChannelMode
    auto: bool
    placeholder_ts: str | None

    @property
    def quiet(self) -> bool:
        return self.auto or self.mode.private

    def _ephemeral(self, message: blocks.Message) -> None:
        q = self.question
        self.desk.bot.messenger.ephemeral(q.channel, q.user, q.thread_ts, message)

    def answer(self, turn: TurnView) -> str | None:
        experts = bool(self.mode.experts)
        if self.auto and stays_quiet(turn):
            self._ephemeral(not_found_privately(turn, experts=experts))
            return None
        if self.mode.private:
            self._ephemeral(private_answer(turn, experts=experts))
            return None
        q = self.question
        return self.desk.bot.messenger.deliver(
            q.channel,
            q.thread_ts,
            self.placeholder_ts,
            public_answer(turn, experts=experts),
            plainer=lambda: blocks.answer_message(turn, feedback_buttons=False),
        )

    def failure(self, text: str) -> None:
        if self.quiet:
            self._ephemeral(blocks.notice_message(text))
            return
        q = self.question
        self.desk.bot.messenger.deliver(
            q.channel, q.thread_ts, self.placeholder_ts, blocks.notice_message(text)
        )

    def tell_asker(self, text: str) -> None:
        self._ephemeral(blocks.notice_message(text))
