"""What the Teams bot shows: pure functions from the conversation service's views to Bot Framework activities.

An answer is one message: Markdown text whose citations "[N]" are Teams citation entities (the page's
title, an excerpt, its link, space and last-modified date in a pop-over), the "AI generated" label, Teams'
native 👍/👎 feedback buttons, and an Adaptive Card with the sources (title, space, updated, possibly
outdated) and an **Explain** button (`Action.Execute`, verb `explain`). Messages are built with the Teams
SDK's builders (`add_ai_generated`, `add_citation`, `add_feedback`); cards are JSON-ready dicts.

Everything is written here from the platform-neutral views (`turn_views`), in Markdown: nothing of Slack's
rendering is borrowed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from microsoft_teams.api.activities.message.message import MessageActivityInput
from microsoft_teams.api.models.attachment.attachment import Attachment
from microsoft_teams.api.models.entity import CitationAppearance

from threadwise.chat.conversations import ExplainView, SourceView, TurnView
from threadwise.chat.markup import escape
from threadwise.chat.turn_views import (
    LABEL_CHARS,
    WHY_TEXT,
    WHY_TITLE,
    cluster_line,
    page_date,
    page_groups,
    page_lines,
)
from threadwise.core.answer.citations import rewrite_citations
from threadwise.teams.admin import TEAMS, link

Card = dict[str, Any]

EXPLAIN = "explain"  # the Action.Execute verbs: Explain, a suggested follow-up, Try again
ASK = "ask"
RETRY = "retry"
MAX_FOLLOW_UPS = 3
CARD_TYPE = "application/vnd.microsoft.card.adaptive"
CARD_VERSION = "1.5"
MAX_CITATIONS = 20  # Teams shows at most 20 citation entities per message
MAX_CLUSTERS_SHOWN = 20
MAX_SOURCE_LINES = 8
MAX_TEXT = 20_000  # Teams refuses messages much beyond ~28 KB
OUTDATED = "⚠ possibly outdated"  # a cited page older than THREADWISE_STALE_AFTER_DAYS


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


# -- answers ------------------------------------------------------------------------------------------


def answer_text(turn: TurnView) -> str:
    """The answer as Teams Markdown, each "[Source N]" turned into the citation marker "[N]"."""
    if turn.error:
        return "⚠️ " + escape(turn.answer)
    if turn.not_found:
        text = "🔎 I couldn't find the answer to this in the Confluence pages I know."
        closest = [s for _, s in page_groups(turn.sources)[:3]]
        if closest:
            text += "\n\nClosest pages I looked at: " + ", ".join(
                link(s.url, s.title or s.label) for s in closest
            )
        text += "\n\nTry other words, or ask an admin whether the right space is synced (`admin status`)."
        return text + (f"\n\n{escape(turn.unmapped_note)}" if turn.unmapped_note else "")
    numbers = {s.number for s in turn.sources}
    body = rewrite_citations(
        escape(turn.answer), lambda n: f"[{n}]" if n in numbers else None, n_sources=max(numbers, default=0)
    )
    return _cut(body, MAX_TEXT)


def add_citations(message: MessageActivityInput, turn: TurnView) -> MessageActivityInput:
    """Teams' citation entities for the cited sources: title, an excerpt and the link, shown on "[N]"."""
    for s in turn.cited_sources[:MAX_CITATIONS]:
        url = s.url if s.url.startswith(("http://", "https://")) else None
        date = page_date(s.last_modified)
        keywords = [_cut(s.space, 28)] if s.space else []
        keywords += [f"updated {date}"] if date else []
        keywords += ["possibly outdated"] if s.possibly_outdated else []
        appearance = CitationAppearance(
            name=_cut(s.title or s.label, 80),
            abstract=_cut(" ".join(s.text.split()), 160) or "…",
            url=url,
            keywords=keywords or None,
        )
        message.add_citation(s.number, appearance)
    return message


def source_lines(sources: Sequence[SourceView]) -> list[str]:
    """One line per page: "[1, 3] [Title](url) · SPACE · updated 2024-05-03 · ⚠ possibly outdated"."""
    pages = page_lines(sources)
    lines = []
    for page in pages[:MAX_SOURCE_LINES]:
        parts = [f"[{', '.join(map(str, page.numbers))}] {link(page.url, _cut(page.title, LABEL_CHARS))}"]
        parts += [escape(page.space)] if page.space else []
        parts += [f"updated {page.date}"] if page.date else []
        parts += [OUTDATED] if page.possibly_outdated else []
        lines.append(" · ".join(parts))
    if len(pages) > MAX_SOURCE_LINES:
        lines.append(f"… and {len(pages) - MAX_SOURCE_LINES} more pages")
    return lines


def _text_block(text: str, **extra: Any) -> dict[str, Any]:
    return {"type": "TextBlock", "text": text, "wrap": True, **extra}


def _execute(title: str, verb: str, data: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "Action.Execute", "title": title, "verb": verb, "data": data, **extra}


def _card(body: list[dict[str, Any]], actions: list[dict[str, Any]]) -> Card:
    card: Card = {
        "type": "AdaptiveCard",
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "version": CARD_VERSION,
        "body": body,
    }
    if actions:
        card["actions"] = actions
    return card


def answer_card(turn: TurnView, *, explain_state: str = "ready", note: str = "") -> Card:
    """The Adaptive Card under an answer: its sources, the Explain button and suggested follow-ups.

    `explain_state`: "ready", "running" or "done" (the button then says "Show the explanation"); `note`
    adds a line under the sources (what a press of Explain did).
    """
    body: list[dict[str, Any]] = []
    shown = turn.cited_sources if not (turn.error or turn.not_found) else []
    if shown:
        body.append(_text_block("**Sources**", spacing="None"))
        body += [_text_block(line, spacing="Small", size="Small") for line in source_lines(shown)]
    if turn.confidence_line:
        body.append(_text_block(escape(turn.confidence_line), isSubtle=True, size="Small"))
    if note:
        body.append(_text_block(note, isSubtle=True, size="Small"))
    actions = []
    if shown:
        title = {"running": "⏳ Explaining…", "done": "🔍 Show the explanation"}.get(
            explain_state, "🔍 Explain"
        )
        actions.append(
            _execute(title, EXPLAIN, {"turn_id": turn.turn_id}, isEnabled=explain_state != "running")
        )
    actions += [  # a press names the answer and which of its questions: the question is read from the store
        _execute("💬 " + _cut(q, 60), ASK, {"turn_id": turn.turn_id, "follow_up": n})
        for n, q in enumerate(turn.follow_ups[:MAX_FOLLOW_UPS], start=1)
    ]
    return _card(body or [_text_block("No sources.", isSubtle=True, size="Small")], actions)


def retry_card(turn: TurnView) -> Card:
    """Under a failed answer: Try again (asks the same question in the same conversation)."""
    return _card([], [_execute("🔁 Try again", RETRY, {"turn_id": turn.turn_id})])


def answer_activity(turn: TurnView, *, explain_state: str = "ready") -> MessageActivityInput:
    """The answer message: text with citations, the AI label, 👍/👎 (not on failures) and the sources card."""
    message = MessageActivityInput(text=answer_text(turn), text_format="markdown")
    if turn.error:  # a failure is not generated content and has nothing to rate; it can be tried again
        return message.add_attachments(Attachment(content_type=CARD_TYPE, content=retry_card(turn)))
    message.add_ai_generated().add_feedback()
    if turn.not_found or not (turn.cited_sources or turn.follow_ups):
        return message
    add_citations(message, turn)
    card = answer_card(turn, explain_state=explain_state)  # sources, Explain, follow-ups
    return message.add_attachments(Attachment(content_type=CARD_TYPE, content=card))


def card_response(card: Card) -> dict[str, Any]:
    """The invoke response to an `Action.Execute` that shows `card` (to the person who pressed)."""
    return {"statusCode": 200, "type": CARD_TYPE, "value": card}


def message_response(text: str) -> dict[str, Any]:
    """The invoke response to an `Action.Execute` that shows a short message."""
    return {"statusCode": 200, "type": "application/vnd.microsoft.activity.message", "value": text}


def notice(text: str) -> MessageActivityInput:
    """A plain message in the thread (greetings, admin replies, failures)."""
    return MessageActivityInput(text=_cut(text, MAX_TEXT), text_format="markdown")


# -- Explain ------------------------------------------------------------------------------------------


def explanation_text(view: ExplainView) -> str:
    """The attribution as Markdown: one paragraph per group of sources, largest share first."""
    expl = view.explanation
    if expl is None:
        return "ℹ️ " + escape(view.text)
    ordered = sorted(expl.clusters, key=lambda c: (not c.scored, -c.share, c.index))
    parts = [f"**{WHY_TITLE}** {WHY_TEXT}"]
    if expl.note:
        parts.append("*" + escape(expl.note) + "*")
    parts += [cluster_line(c, TEAMS) for c in ordered[:MAX_CLUSTERS_SHOWN]]
    if len(ordered) > MAX_CLUSTERS_SHOWN:
        parts.append(f"… and {len(ordered) - MAX_CLUSTERS_SHOWN} smaller groups")
    seconds = expl.timings_ms.get("total", 0.0) / 1000
    footer = f"{expl.answer_calls} answer calls · {seconds:.1f} s"
    parts.append(footer + (" · computed earlier" if view.cached else ""))
    return _cut("\n\n".join(parts), MAX_TEXT)


def explanation_activity(view: ExplainView) -> MessageActivityInput:
    return notice(explanation_text(view))


def explanation_card(turn: TurnView, view: ExplainView) -> Card:
    """The answer's card with the stored explanation under it: what a second press of Explain shows."""
    card = answer_card(turn, explain_state="done")
    card["body"] = card["body"] + [
        _text_block(paragraph, spacing="Small", size="Small")
        for paragraph in explanation_text(view).split("\n\n")
    ]
    return card
