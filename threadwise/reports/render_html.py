"""The report as one self-contained HTML file: inline CSS and SVG, no script, readable on a phone (tables
scroll sideways inside their box, charts scale to the screen)."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from threadwise.reports.charts import per_day_chart, topics_chart
from threadwise.reports.model import Page, Question, Report

_STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:960px;
padding:12px;line-height:1.4;color:#1d1d1d}
h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:1px solid #ddd;padding-bottom:4px;margin-top:1.6em}
h3{font-size:1em;margin-bottom:4px}.box{overflow-x:auto}table{border-collapse:collapse;width:100%}
th,td{border-bottom:1px solid #eee;padding:4px 6px;text-align:left;vertical-align:top}td.n{text-align:right}
blockquote{margin:2px 0 2px 12px;padding-left:8px;border-left:3px solid #c62828;color:#444}
.muted{color:#666;font-size:.9em}svg{display:block;max-width:640px}a{color:#0b57d0;word-break:break-word}
"""


def _link(text: str, url: str) -> str:
    return f'<a href="{escape(url)}">{escape(text)}</a>' if url else escape(text)


def _page(page: Page) -> str:
    editor = (
        f' <span class="muted">last edited by {escape(page.last_editor)}</span>' if page.last_editor else ""
    )
    return _link(page.title or page.page_id, page.url) + editor


def _thread(url: str) -> str:
    return f' <a class="muted" href="{escape(url)}">thread</a>' if url else ""


def _table(head: Sequence[str], rows: Sequence[Sequence[object]], *, empty: str) -> str:
    """Cells are HTML already when given as str; numbers are right-aligned."""
    if not rows:
        return f"<p>{escape(empty)}</p>"
    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(_td(v) for v in row) + "</tr>" for row in rows)
    return f'<div class="box"><table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table></div>'


def _td(value: object) -> str:
    if isinstance(value, float):
        return f'<td class="n">{value:.2f}</td>'
    return f'<td class="n">{value}</td>' if isinstance(value, int) else f"<td>{value}</td>"


def _question(q: Question) -> str:
    marks = ", ".join(
        m for m in ("not found" if q.not_found else "", f"👎 {q.down_votes}" if q.down_votes else "") if m
    )
    who = f", asked by {escape(q.asked_by)}" if q.asked_by else ""
    quotes = "".join(f"<blockquote>{escape(c)}</blockquote>" for c in q.comments)
    return (
        f'<li>{escape(q.question)} <span class="muted">({marks}, {q.asked_at[:10]}{who})</span>'
        f"{_thread(q.thread)}{quotes}</li>"
    )


def _unanswered(report: Report) -> str:
    if not report.unanswered:
        return "<p>Every question found an answer nobody voted down.</p>"
    parts = [topics_chart(report.unanswered)]
    for g in report.unanswered:
        words = f' <span class="muted">{escape(", ".join(g.words))}</span>' if g.words else ""
        parts.append(f'<div class="topic"><h3>{escape(g.topic)} ({g.count}){words}</h3><ul>')
        parts += [_question(q) for q in g.questions]
        parts.append("</ul>")
        if g.closest_pages:
            parts.append("<p>Closest pages: " + ", ".join(_page(p) for p in g.closest_pages) + "</p>")
        if g.spaces:
            parts.append(f'<p class="muted">Spaces: {escape(", ".join(g.spaces))}</p>')
        parts.append("</div>")
    if report.not_grouped:
        parts.append(f"<p>{report.not_grouped} more questions were not grouped (too many distinct ones).</p>")
    return "".join(parts)


def _misleading(report: Report) -> str:
    table = _table(
        ("page", "weight", "👎", "answers", "explained"),
        [
            (_page(m.page), round(m.weight, 2), m.down_votes, m.answers, m.explained)
            for m in report.misleading_pages
        ],
        empty="No answer was voted down.",
    )
    said = [
        f"<li>{_page(m.page)}: <blockquote>{escape(c.comment)}</blockquote>"
        f'<span class="muted">on “{escape(c.question)}”{f", by {escape(c.by)}" if c.by else ""}</span>'
        f"{_thread(c.thread)}</li>"
        for m in report.misleading_pages
        for c in m.comments
    ]
    return table + (f"<ul>{''.join(said)}</ul>" if said else "")


def _conflicts(report: Report) -> str:
    if not report.conflicts:
        return "<p>No answer found two pages disagreeing.</p>"
    items = []
    for k in report.conflicts:
        newer = k.newer_page
        note = f"; newer: {_page(newer)}" if newer else ""
        items.append(
            f"<li>{_page(k.first)} ({escape(k.first.last_modified or '?')}) and {_page(k.other)} "
            f"({escape(k.other.last_modified or '?')}): {k.count}×{note}"
            f'<br><span class="muted">last {k.last_seen[:10]}: “{escape(k.question)}”</span>{_thread(k.thread)}</li>'
        )
    return f"<ul>{''.join(items)}</ul>"


def render_html(report: Report) -> str:
    t = report.totals
    sections = [
        ("questions_per_day", "Questions per day", per_day_chart(report.questions_per_day)),
        ("unanswered", "Unanswered", _unanswered(report)),
        ("misleading_pages", "Pages that mislead", _misleading(report)),
        (
            "stale_pages",
            f"Stale pages that still answer (not modified for over {report.stale_after_days} days)",
            _table(
                ("page", "cited", "last modified", "days"),
                [
                    (_page(s.page), s.citations, escape(s.page.last_modified), s.days_since_modified)
                    for s in report.stale_pages
                ],
                empty="No stale page was cited.",
            ),
        ),
        ("conflicts", "Conflicts", _conflicts(report)),
        (
            "most_used_pages",
            "Most used pages",
            _table(
                ("page", "cited", "👍", "👎", "last modified"),
                [
                    (_page(u.page), u.citations, u.up_votes, u.down_votes, escape(u.page.last_modified))
                    for u in report.most_used_pages
                ],
                empty="No page was cited.",
            ),
        ),
        (
            "questions_per_space",
            "Questions per space",
            _table(
                ("space", "questions", "answered", "not found", "👎"),
                [
                    (escape(s.space) or "(none)", s.questions, s.answered, s.not_found, s.down_votes)
                    for s in report.questions_per_space
                ],
                empty="No questions.",
            ),
        ),
    ]
    body = "".join(
        f'<section id="{key}"><h2>{escape(title)}</h2>{html}</section>' for key, title, html in sections
    )
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>What the wiki is missing</title><style>{_STYLE}</style></head><body>"
        "<h1>What the wiki is missing</h1>"
        f'<p class="muted">{report.since[:10]} to {report.until[:10]} ({report.days} days): {t.questions} questions, '
        f"{t.answered} answered, {t.not_found} not found, {t.down_votes} answers voted 👎.</p>"
        f"{body}</body></html>\n"
    )
