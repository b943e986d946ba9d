"""The knowledge-gap summary (the top groups of unanswered questions) as text, built once for every front end:
the Slack App Home, `/threadwise gaps`, Teams' `admin gaps` and the weekly digest. Each platform hands in its
`Markup` (Slack mrkdwn, Teams Markdown); the words and their order are the same everywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from threadwise.reports.model import TopicGroup

TOP = 5
TITLE = "Knowledge gaps"
MAX_QUESTION = 150


@dataclass(frozen=True)
class Markup:
    """How a platform writes bold text, a link (url, label) and plain text."""

    bold: Callable[[str], str]
    link: Callable[[str, str], str]
    escape: Callable[[str], str]


def _short(text: str, limit: int = MAX_QUESTION) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _counts(group: TopicGroup) -> str:
    parts = [f"{group.count} {'question' if group.count == 1 else 'questions'}"]
    detail = [f"{group.not_found} not found" if group.not_found else ""]
    detail.append(f"{group.down_votes} 👎" if group.down_votes else "")
    detail = [d for d in detail if d]
    return parts[0] + (f" ({', '.join(detail)})" if detail else "")


def group_lines(group: TopicGroup, rank: int, markup: Markup) -> list[str]:
    """One group: its typical question and counts, then its telling words, an example, the closest pages."""
    lines = [f"{rank}. {markup.bold(markup.escape(_short(group.topic)))} — {_counts(group)}"]
    about = []
    if group.words:
        about.append("words: " + markup.escape(", ".join(group.words)))
    if group.spaces:
        about.append("spaces: " + markup.escape(", ".join(group.spaces)))
    if about:
        lines.append("    " + " · ".join(about))
    others = [q.question for q in group.questions if q.question.strip() != group.topic.strip()]
    if others:
        lines.append("    also asked: " + markup.escape(_short(others[0])))
    if group.closest_pages:
        pages = [markup.link(p.url, p.title or p.page_id) for p in group.closest_pages[:3]]
        lines.append("    closest pages: " + ", ".join(pages))
    return lines


def gaps_summary(groups: Sequence[TopicGroup], *, days: int, markup: Markup) -> str:
    """The summary of the largest groups of questions that found no answer (or got 👎) in the last `days`."""
    head = f"{markup.bold(TITLE)} (last {days} days)"
    if not groups:
        return f"{head}: every question found an answer nobody voted down."
    lines = [f"{head}: the {len(groups)} largest groups of questions I could not answer or that got 👎"]
    for rank, group in enumerate(groups, 1):
        lines += group_lines(group, rank, markup)
    return "\n".join(lines)


def markdown_link(url: str, label: str) -> str:
    """A Markdown link; the label alone when there is no web address."""
    label = " ".join(label.split()).replace("[", "(").replace("]", ")")
    return f"[{label}]({url})" if url.startswith(("http://", "https://")) else label


# Teams (and any Markdown reader): **bold**, [label](url), text as is
MARKDOWN = Markup(bold=lambda t: f"**{t}**", link=markdown_link, escape=lambda t: t)
