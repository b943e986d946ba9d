"""What people wrote in a Slack thread besides the questions the bot answered: it completes a question
("@Threadwise any idea?" under someone's problem is completed with that problem)."""

from __future__ import annotations

import logging
import re

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from threadwise.chat.conversations import ConversationService
from threadwise.slack.messenger import why
from threadwise.slack.mrkdwn import plain_question
from threadwise.slack.question import Question

_MENTION = re.compile(r"<@[A-Z0-9]+(?:\|[^>]*)?>")
log = logging.getLogger(__name__)


def thread_context(
    client: WebClient, conversations: ConversationService, question: Question, *, keep: int = 3
) -> list[str]:
    """The last `keep` messages of people in the question's thread that were not questions to the bot, oldest
    first. Best effort: a thread that cannot be read just gives no context."""
    if not question.ts or question.ts == question.thread_ts:
        return []  # the question starts the thread: nothing else was said
    try:
        reply = client.conversations_replies(channel=question.channel, ts=question.thread_ts, limit=100)
    except SlackApiError as err:
        log.info("no thread context for %s: %s", question.thread_ts, why(err))
        return []
    asked = {t.question for t in conversations.history(question.key)} | {question.text}
    said = []
    for m in reply.get("messages") or []:
        if m.get("bot_id") or m.get("subtype") or not m.get("user") or m.get("ts") == question.ts:
            continue
        text = plain_question(_MENTION.sub("", str(m.get("text") or ""))).strip()
        if text and text not in asked:
            said.append(text[:300])
    return said[-keep:]
