"""A Slack question whose replica died before answering it, answered (or told to ask again) by this replica.

The claim's payload is what `SlackBot.start_answer` stored: the question's fields and, once posted, the
placeholder's ts, so the answer replaces the "thinking" message the user already sees.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields

from threadwise.bot import blocks
from threadwise.bot.question import Question
from threadwise.bot.slack_messenger import SlackMessenger
from threadwise.db.claims import Claim
from threadwise.handover import INTERRUPTED


def resume_slack(
    claim: Claim,
    give_up: bool,
    *,
    messenger: SlackMessenger,
    answer: Callable[[Question, str | None, str], None],
    finish: Callable[[str], None],
) -> None:
    """Queue the claimed question's answer (`answer(question, placeholder_ts, claim key)`, which finishes the
    claim), or tell its thread it was interrupted and `finish` the claim."""
    payload = claim.payload
    question = Question(**{f.name: payload[f.name] for f in fields(Question) if f.name in payload})
    ts = payload.get("placeholder_ts") or None
    if give_up:
        try:
            notice = blocks.notice_message(f":warning: {INTERRUPTED}")
            messenger.deliver(question.channel, question.thread_ts, ts, notice)
        finally:
            finish(claim.key)
        return
    answer(question, ts, claim.key)
