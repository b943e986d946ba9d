"""Slack's Agents & AI Apps surface: the assistant view beside a conversation, with Bolt's `Assistant`.

    the user opens it (assistant_thread_started) → a greeting and up to 4 suggested prompts: the most asked
        questions (asked by at least two people and answered), then the synced spaces
    a question in the thread (message.im) → claim → status "is searching the wiki…" and the thread's title
        (the question) → the answer through the same path as every other question (`SlackBot.start_answer`):
        streamed while the language model writes it, then the same blocks, Explain and 👍/👎
    assistant_thread_context_changed (the user moved to another channel) → nothing to keep: answers do not
        depend on the channel the view sits beside

Bolt's `Assistant` takes every threaded DM message without a bot id (its `user_message`), so DM threads are
answered here and top-level DMs by the app's `message` listener, as before.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from slack_bolt import Assistant
from slack_sdk.errors import SlackApiError
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from threadwise.db.conversations import TurnRow
from threadwise.slack.handover import inbox_key
from threadwise.slack.question import PLATFORM, question_of
from threadwise.sync.admin import AdminService, SpaceStatus

log = logging.getLogger(__name__)

STATUS = "is searching the wiki…"
GREETING = (
    "Hi! I answer from your Confluence pages, with the sources I used. "
    "Ask me anything, or pick one of the suggestions."
)
PROMPTS_TITLE = "Try asking"
MAX_PROMPTS = 4  # Slack shows up to four
TITLE_CHARS = 80  # a thread's title, cut
PROMPT_CHARS = 75  # a suggested prompt's title, cut (the whole question is sent)
MOST_ASKED_DAYS = 90
MIN_ASKERS = 2  # a question becomes a suggestion once this many people asked it: nobody's alone is shown


def cut(text: str, limit: int) -> str:
    """`text` on one line, at most `limit` characters (an ellipsis where cut)."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def most_asked(
    sessions: sessionmaker[Session], *, limit: int = MAX_PROMPTS, days: int = MOST_ASKED_DAYS
) -> list[str]:
    """The questions most people asked in the last `days` (by distinct askers, at least `MIN_ASKERS`) and
    that were answered (not failed, not "not found"), most asked first; each as one asker wrote it."""
    since = datetime.now(UTC) - timedelta(days=days)
    text = func.lower(func.trim(TurnRow.question))
    query = (
        select(func.min(TurnRow.question), func.count(func.distinct(TurnRow.asked_by)).label("askers"))
        .where(TurnRow.created_at >= since, TurnRow.error.is_(None), TurnRow.not_found.is_(False))
        .where(TurnRow.asked_by != "")
        .group_by(text)
        .having(func.count(func.distinct(TurnRow.asked_by)) >= MIN_ASKERS)
        .order_by(func.count(func.distinct(TurnRow.asked_by)).desc(), func.max(TurnRow.id).desc())
        .limit(limit)
    )
    with sessions() as s:
        return [str(q) for q, _n in s.execute(query).all() if q and str(q).strip()]


def suggested_prompts(questions: Sequence[str], spaces: Sequence[SpaceStatus]) -> list[dict[str, str]]:
    """Up to `MAX_PROMPTS` prompts ({title, message}): the most asked questions, then one per synced space."""
    prompts = [{"title": cut(q, PROMPT_CHARS), "message": " ".join(q.split())} for q in questions]
    for space in spaces:
        if space.pages and (space.enabled or not space.configured):
            name = space.name or space.key
            prompts.append(
                {"title": cut(f"What is in {name}?", PROMPT_CHARS), "message": f"What can I find in {name}?"}
            )
    unique: dict[str, dict[str, str]] = {}
    for prompt in prompts:
        unique.setdefault(prompt["message"].casefold(), prompt)
    return list(unique.values())[:MAX_PROMPTS]


def assistant_for(
    *,
    admin: AdminService,
    external: Callable[[dict[str, Any], dict[str, Any]], bool],
    start_answer: Callable[..., bool],
    finish_claim: Callable[[str | None], None],
) -> Assistant:
    """Bolt's `Assistant` middleware (`app.use(...)`) over the Slack bot's own steps: whether the author is
    let in (`external`), `start_answer(question, claim=, announce=)` and `finish_claim(key)`."""
    assistant = Assistant(logger=logging.getLogger("threadwise.bolt"))

    @assistant.thread_started
    def greet(say: Callable[..., Any], set_suggested_prompts: Callable[..., Any]) -> None:
        _quietly("chat.postMessage (the greeting)", say, GREETING)
        try:
            prompts = suggested_prompts(most_asked(admin.sessions), admin.status())
        except Exception:  # the greeting stands without suggestions
            log.exception("could not make suggested prompts")
            return
        if prompts:
            _quietly(
                "assistant.threads.setSuggestedPrompts", set_suggested_prompts, prompts, title=PROMPTS_TITLE
            )

    @assistant.thread_context_changed
    def context_changed() -> None:
        """Answers do not depend on the channel beside the view: nothing to keep (and no call to Slack)."""

    @assistant.user_message
    def question(
        body: dict[str, Any],
        event: dict[str, Any],
        context: Any,
        set_status: Callable[..., Any],
        set_title: Callable[..., Any],
    ) -> None:
        try:
            if event.get("subtype") not in (None, "file_share"):
                return
            asked = question_of(body, event, context)
            if asked is None or not asked.text:
                return
            asked = replace(asked, external=external(body, event))

            def announce() -> None:  # before anything carrying the answer is posted
                _quietly("assistant.threads.setStatus", set_status, STATUS)
                _quietly("assistant.threads.setTitle", set_title, cut(asked.text, TITLE_CHARS))

            start_answer(asked, claim=f"{asked.team}:{asked.channel}:{event['ts']}", announce=announce)
        finally:
            finish_claim(inbox_key(PLATFORM, body))

    return assistant


def _quietly(method: str, call: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    """Call a Slack method whose failure must not cost the answer (a refusal, e.g. a DM thread outside the
    assistant view, or no connection): logged."""
    try:
        call(*args, **kwargs)
    except SlackApiError as err:
        log.info("%s failed: %s", method, err.response.get("error"))
    except Exception as err:
        log.warning("%s failed: %r", method, err)
