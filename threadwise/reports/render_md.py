"""The report as Markdown: for a wiki page, an e-mail or a chat message (Slack and Teams read this subset)."""

from __future__ import annotations

from threadwise.reports.model import Conflict, Page, Question, Report


def _cell(text: str) -> str:
    """Text inside a table cell: one line, no pipe."""
    return " ".join(text.split()).replace("|", "\\|")


def page_link(page: Page) -> str:
    title = _cell(page.title or page.page_id).replace("[", "(").replace("]", ")")
    editor = f" (last edited by {_cell(page.last_editor)})" if page.last_editor else ""
    return (f"[{title}]({page.url})" if page.url else title) + editor


def _thread(link: str) -> str:
    return f" ([thread]({link}))" if link else ""


def _question_line(q: Question) -> str:
    marks = ["not found" if q.not_found else "", f"👎 {q.down_votes}" if q.down_votes else ""]
    who = f", asked by {q.asked_by}" if q.asked_by else ""
    head = f"- {_cell(q.question)} ({', '.join(m for m in marks if m)}, {q.asked_at[:10]}{who}){_thread(q.thread)}"
    return "\n".join([head, *(f"  > {_cell(c)}" for c in q.comments)])


def _conflict_line(k: Conflict) -> str:
    newer = f"; newer: {page_link(k.newer_page)}" if k.newer_page else ""
    pages = f"{page_link(k.first)} ({k.first.last_modified or '?'}) and {page_link(k.other)} ({k.other.last_modified or '?'})"
    return (
        f"- {pages}: {k.count}×, last {k.last_seen[:10]} on *{_cell(k.question)}*{newer}{_thread(k.thread)}"
    )


def render_markdown(report: Report) -> str:
    t = report.totals
    out = [
        "# What the wiki is missing",
        "",
        f"{report.since[:10]} to {report.until[:10]} ({report.days} days): {t.questions} questions, "
        f"{t.answered} answered, {t.not_found} not found, {t.down_votes} answers voted 👎.",
        "",
        "## Unanswered",
        "",
    ]
    if not report.unanswered:
        out += ["Every question found an answer nobody voted down.", ""]
    for g in report.unanswered:
        words = f" — {', '.join(g.words)}" if g.words else ""
        out += [f"### {_cell(g.topic)} ({g.count}){words}", ""]
        out += [_question_line(q) for q in g.questions]
        if g.closest_pages:
            out.append("- Closest pages: " + ", ".join(page_link(p) for p in g.closest_pages))
        if g.spaces:
            out.append("- Spaces: " + ", ".join(g.spaces))
        out.append("")
    if report.not_grouped:
        out += [f"{report.not_grouped} more questions were not grouped (too many distinct ones).", ""]
    out += ["## Pages that mislead", ""]
    out += _table(
        ("page", "weight", "👎", "answers", "explained"),
        [
            (page_link(m.page), round(m.weight, 2), m.down_votes, m.answers, m.explained)
            for m in report.misleading_pages
        ],
        empty="No answer was voted down.",
    )
    out.append("")
    for m in report.misleading_pages:
        for said in m.comments:
            by = f" ({said.by})" if said.by else ""
            out.append(
                f"- {page_link(m.page)}: “{_cell(said.comment)}”{by} on *{_cell(said.question)}*"
                f"{_thread(said.thread)}"
            )
    out += [
        "",
        f"## Stale pages that still answer (not modified for over {report.stale_after_days} days)",
        "",
    ]
    out += _table(
        ("page", "cited", "last modified", "days"),
        [
            (page_link(s.page), s.citations, s.page.last_modified, s.days_since_modified)
            for s in report.stale_pages
        ],
        empty="No stale page was cited.",
    )
    out += ["", "## Conflicts", ""]
    out += [_conflict_line(k) for k in report.conflicts] or ["No answer found two pages disagreeing."]
    out += ["", "## Most used pages", ""]
    out += _table(
        ("page", "cited", "👍", "👎", "last modified"),
        [
            (page_link(u.page), u.citations, u.up_votes, u.down_votes, u.page.last_modified)
            for u in report.most_used_pages
        ],
        empty="No page was cited.",
    )
    out += ["", "## Questions per space", ""]
    out += _table(
        ("space", "questions", "answered", "not found", "👎"),
        [
            (_cell(s.space) or "(none)", s.questions, s.answered, s.not_found, s.down_votes)
            for s in report.questions_per_space
        ],
        empty="No questions.",
    )
    return "\n".join(out).rstrip() + "\n"


def _table(head: tuple[str, ...], rows: list[tuple[object, ...]], *, empty: str) -> list[str]:
    """A Markdown table (numbers right-aligned), or `empty` when there are no rows."""
    if not rows:
        return [empty]
    align = ["---:" if isinstance(v, int | float) else "---" for v in rows[0]]
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join(align) + " |"]
    return lines + [
        "| " + " | ".join(f"{v:.2f}" if isinstance(v, float) else str(v) for v in row) + " |" for row in rows
    ]
