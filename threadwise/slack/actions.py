"""What the buttons, menus, modals and the `/threadwise` command do. Each listener acks first, then works.

- Explain (`explain`): the button says "Explaining…", the attribution is posted in the thread, the button
  says "Explained". A second press shows the stored result privately, at once.
- 👍/👎 (`feedback`, values up/down): stored per user and turn (a new vote replaces the old); 👎 opens the
  optional "what was wrong?" modal.
- Behind the scenes (overflow `more`), Read the full answer, Try again, suggested follow-ups.

Every button that names an answer goes through `threadwise.chat.pressed`: the answer must be this thread's and the
presser allowed to see it, else they are told so privately (an ephemeral message) and nothing else happens.
A button that asks a question (Try again, follow-ups) asks nothing for a user of another organisation (Slack
Connect) unless they are let in: they get the mention's polite refusal, privately.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from slack_bolt import App

from threadwise.chat.admin_commands import AdminCommands, is_instant
from threadwise.chat.conversations import ConversationService, TurnView
from threadwise.chat.pressed import pressed_turn, suggested
from threadwise.chat.trace_render import render_trace
from threadwise.db.conversations import ThreadKey
from threadwise.slack import blocks
from threadwise.slack.admins import HELP, mentions_in
from threadwise.slack.identity import is_direct_message
from threadwise.slack.messenger import SlackMessenger
from threadwise.slack.question import EXTERNAL, PLATFORM, Question

log = logging.getLogger(__name__)

COMMAND = "/threadwise"


@dataclass(frozen=True)
class ActionContext:
    """What the handlers work with, handed in by the app: they never import it (no circle)."""

    messenger: SlackMessenger
    conversations: ConversationService
    commands: AdminCommands
    submit: Callable[[Callable[[], None], str], object]  # slow work, in the answer pool
    start_answer: Callable[..., bool]  # (question, *, claim, placeholder_ts=None) -> False for a repeat
    claim: Callable[[str], bool]  # True the first time a key is claimed
    may_see: Callable[
        [str, str, TurnView], bool
    ]  # (user, channel, turn): may they see more of a stored answer
    external: Callable[[dict[str, Any]], bool]  # (press): its presser is another organisation's, not let in
    # (channel, user, thread_ts, answer): after a 👎, what a help-desk channel offers (Still need help?)
    down_voted: Callable[[str, str, str, TurnView], None] | None = None


def register_actions(app: App, bot: ActionContext) -> None:
    app.action(blocks.EXPLAIN)(lambda ack, body, action: _explain(bot, ack, body, action))
    app.action(blocks.FEEDBACK)(lambda ack, body, action: _feedback(bot, ack, body, action))
    app.action(blocks.MORE)(lambda ack, body, action: _more(bot, ack, body, action))
    app.action(blocks.FULL_ANSWER)(lambda ack, body, action: _full_answer(bot, ack, body, action))
    app.action(blocks.RETRY)(lambda ack, body, action: _retry(bot, ack, body, action))
    app.action(re.compile(f"^{blocks.FOLLOW_UP}_\\d+$"))(
        lambda ack, body, action: _follow_up(bot, ack, body, action)
    )
    app.view(blocks.FEEDBACK_MODAL)(lambda ack, body, view: _feedback_comment(bot, ack, body, view))
    app.command(COMMAND)(lambda ack, body, command, respond: _command(bot, ack, command, respond))
    # Anything else Slack sends (an event type we did not ask for, a stray button) is acknowledged and
    # logged, so Slack neither retries it nor shows the user an error.
    app.event(re.compile(".*"))(_ignore_event)
    app.action(re.compile(".*"))(_ignore_action)
    app.view(re.compile(".*"))(_ignore_action)


def _ignore_event(body: dict[str, Any]) -> None:
    log.info("ignored event %s", (body.get("event") or {}).get("type"))


def _ignore_action(ack: Any, body: dict[str, Any]) -> None:
    ack()
    actions = body.get("actions") or [{}]
    log.info(
        "ignored %s %s",
        body.get("type"),
        actions[0].get("action_id") or (body.get("view") or {}).get("callback_id"),
    )


class _Where:
    """Where a block action happened: who pressed, in which channel, on which message of which thread."""

    def __init__(self, body: dict[str, Any]) -> None:
        container = body.get("container") or {}
        message = body.get("message") or {}
        self.user = str((body.get("user") or {}).get("id", ""))
        self.channel = str((body.get("channel") or {}).get("id") or container.get("channel_id") or "")
        self.message_ts = message.get("ts") or container.get("message_ts")
        self.thread_ts = message.get("thread_ts") or container.get("thread_ts") or self.message_ts
        self.team = str((body.get("team") or {}).get("id") or body.get("team_id") or "")
        self.trigger_id = body.get("trigger_id")

    @property
    def complete(self) -> bool:
        return bool(self.user and self.channel and self.message_ts)


_notice = blocks.notice_message


def _turn_here(bot: ActionContext, where: _Where, value: Any) -> TurnView | None:
    """The answer a press names (`value`: "42", "trace:42" or "turn:42:…") if it was given in the thread the
    button was pressed in and the presser may see it (`pressed_turn`), else None: the presser is told why,
    privately, and nothing of that answer is shown."""
    if not where.complete:
        log.info("ignored a press that does not say where it happened")
        return None
    number = str(value).removeprefix("turn:").removeprefix("trace:").split(":", 1)[0]
    key = ThreadKey(PLATFORM, where.team, where.channel, str(where.thread_ts))
    pressed = pressed_turn(
        bot.conversations,
        number,
        key=key,
        may_see=lambda turn: bot.may_see(where.user, where.channel, turn),
        user=where.user,
    )
    if pressed.turn is None and pressed.refusal:
        bot.messenger.ephemeral(where.channel, where.user, where.thread_ts, _notice(pressed.refusal))
    return pressed.turn


def _outsider(bot: ActionContext, where: _Where, body: dict[str, Any]) -> bool:
    """True when the presser may not ask (another organisation's user, not let in): told so privately."""
    if not bot.external(body):
        return False
    bot.messenger.ephemeral(where.channel, where.user, where.thread_ts, _notice(EXTERNAL))
    return True


def _open(bot: ActionContext, where: _Where, view: dict[str, Any]) -> None:
    """Open a modal for the user who pressed; privately in the thread when Slack will not open it."""
    if not bot.messenger.open_modal(where.trigger_id or "", view):
        bot.messenger.ephemeral(
            where.channel,
            where.user,
            where.thread_ts,
            _notice("Sorry, Slack would not open that window; please try again."),
        )


# -- Explain ------------------------------------------------------------------------------------------------


def _explain(bot: ActionContext, ack: Any, body: dict[str, Any], action: dict[str, Any]) -> None:
    ack()
    where = _Where(body)
    turn = _turn_here(bot, where, action.get("value"))
    if turn is None:
        return
    _mark(bot, where, turn, "running")

    def work() -> None:
        view = bot.conversations.explain(turn.turn_id)
        message = blocks.explanation_message(view)
        if view.cached:  # it is in the thread already: show it again to this user only
            bot.messenger.ephemeral(where.channel, where.user, where.thread_ts, message)
        else:
            bot.messenger.post(where.channel, where.thread_ts, message)
        state = "ready" if view.error else "done"
        _mark(bot, where, turn, state)

    bot.submit(work, f"explaining answer {turn.turn_id}")


def _mark(bot: ActionContext, where: _Where, turn: TurnView, explain_state: str) -> None:
    """Show the Explain button's state on the answer (a failed edit only costs the label: logged)."""
    bot.messenger.edit(
        where.channel,
        str(where.message_ts),
        blocks.answer_message(turn, explain_state=explain_state),
        plainer=lambda: blocks.answer_message(turn, explain_state=explain_state, feedback_buttons=False),
    )


# -- feedback -----------------------------------------------------------------------------------------------


def _feedback(bot: ActionContext, ack: Any, body: dict[str, Any], action: dict[str, Any]) -> None:
    ack()
    where = _Where(body)
    vote = action.get("value")
    if vote not in ("up", "down"):
        log.info("ignored a feedback press without a vote: %.40r", vote)
        return
    turn = _turn_here(bot, where, action.get("block_id"))
    if turn is None:
        return
    turn_id = turn.turn_id
    if vote == "down":  # the modal first: its trigger expires after 3 s
        _open(
            bot, where, blocks.feedback_modal(turn_id, channel=where.channel, thread_ts=str(where.thread_ts))
        )
    bot.conversations.vote(turn_id, where.user, vote)
    if vote == "down" and bot.down_voted is not None:
        bot.down_voted(where.channel, where.user, str(where.thread_ts), turn)
    if vote == "up":
        bot.messenger.ephemeral(
            where.channel, where.user, where.thread_ts, _notice("Thanks for the 👍, noted.")
        )


def _feedback_comment(bot: ActionContext, ack: Any, body: dict[str, Any], view: dict[str, Any]) -> None:
    ack()
    try:
        metadata = json.loads(view.get("private_metadata") or "{}")
        turn_id, channel, thread_ts = metadata["turn_id"], metadata["channel"], metadata["thread_ts"]
    except (ValueError, KeyError, TypeError):
        log.info("ignored a feedback form without its answer")
        return
    values = (view.get("state") or {}).get("values") or {}
    text = ((values.get(blocks.COMMENT_BLOCK) or {}).get(blocks.COMMENT_INPUT) or {}).get("value") or ""
    if not text.strip():
        return
    # where the 👎 was pressed, as the form remembers it: the comment goes through the same check as the vote
    pressed = {"channel": {"id": channel}, "container": {"message_ts": thread_ts, "thread_ts": thread_ts}}
    where = _Where({**body, **pressed})
    turn = _turn_here(bot, where, turn_id)
    if turn is not None:
        bot.conversations.comment(turn.turn_id, where.user, text.strip())


# -- the overflow menu, the full answer, retries, follow-ups ----------------------------------------------


def _more(bot: ActionContext, ack: Any, body: dict[str, Any], action: dict[str, Any]) -> None:
    ack()
    where = _Where(body)
    value = str((action.get("selected_option") or {}).get("value", ""))
    if not value.startswith("trace:"):
        log.info("ignored an unknown option of the answer's menu: %.40r", value)
        return
    turn = _turn_here(bot, where, value)
    if turn is None:
        return
    turn_id = turn.turn_id
    try:
        text = render_trace(bot.conversations.trace(turn_id), prompts=False)
    except KeyError:
        bot.messenger.ephemeral(
            where.channel, where.user, where.thread_ts, _notice(f"I have no record of answer {turn_id}.")
        )
        return
    _open(bot, where, blocks.trace_modal(turn_id, text))


def _full_answer(bot: ActionContext, ack: Any, body: dict[str, Any], action: dict[str, Any]) -> None:
    ack()
    where = _Where(body)
    turn = _turn_here(bot, where, action.get("value"))
    if turn is not None:
        _open(bot, where, blocks.full_answer_modal(turn))


def _retry(bot: ActionContext, ack: Any, body: dict[str, Any], action: dict[str, Any]) -> None:
    """Ask a failed question again, in place of the failure message."""
    ack()
    where = _Where(body)
    turn = _turn_here(bot, where, action.get("value"))
    if turn is None or _outsider(bot, where, body):
        return
    question = Question(
        where.team,
        where.channel,
        str(where.thread_ts),
        where.user,
        turn.question,
        private=is_direct_message(where.channel),
    )
    bot.start_answer(question, claim=f"retry:{turn.turn_id}", placeholder_ts=where.message_ts)


def _follow_up(bot: ActionContext, ack: Any, body: dict[str, Any], action: dict[str, Any]) -> None:
    """A suggested follow-up of this thread's answer, asked in the thread in the name of the user who pressed
    it (once per message). The question is the one stored with the answer, not what the press carries."""
    ack()
    where = _Where(body)
    turn = _turn_here(bot, where, action.get("block_id"))
    if turn is None or _outsider(bot, where, body):
        return
    number = str(action.get("action_id", "")).removeprefix(f"{blocks.FOLLOW_UP}_")
    text = suggested(turn, number, shown=blocks.MAX_FOLLOW_UPS)
    if text is None:
        log.info("ignored a press of follow-up %.8r, which answer %s does not suggest", number, turn.turn_id)
        return
    claim = f"{where.team}:{where.channel}:{where.message_ts}:{action.get('action_id')}"
    if not bot.claim(claim):
        bot.messenger.ephemeral(
            where.channel,
            where.user,
            where.thread_ts,
            _notice("That question was asked already; the answer is in the thread."),
        )
        return
    bot.messenger.post(where.channel, where.thread_ts, blocks.asked_for_message(where.user, text))
    question = Question(
        where.team,
        where.channel,
        str(where.thread_ts),
        where.user,
        text,
        private=is_direct_message(where.channel),
    )
    bot.start_answer(question, claim=None)


# -- /threadwise ---------------------------------------------------------------------------------------------


def _command(bot: ActionContext, ack: Any, command: dict[str, Any], respond: Any) -> None:
    text = str(command.get("text") or "").strip()
    user, channel = str(command.get("user_id", "")), str(command.get("channel_id", ""))
    if is_instant(text):
        ack(text=HELP, response_type="ephemeral")
        return
    ack()

    def reply(message: str) -> None:
        respond(text=message, response_type="ephemeral", replace_original=False)

    bot.submit(
        lambda: bot.commands.run(text, user=user, channel=channel, reply=reply, mentions=mentions_in(text)),
        f"/threadwise {text}",
    )
