"""The report as JSON for scripts and dashboards: the sections are top-level keys, each page is flat
(`page_id`, `title`, `url`, `space`, `last_modified` as an ISO date, `last_editor` when Confluence names one)
with its numeric counts beside it."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from threadwise.reports.model import Page, Question, Report


def _page(page: Page, **counts: Any) -> dict[str, Any]:
    """`last_editor` only when Confluence named one."""
    return {**{k: v for k, v in asdict(page).items() if k != "last_editor" or v}, **counts}


def _question(q: Question) -> dict[str, Any]:
    out = {k: v for k, v in asdict(q).items() if k != "asked_by"}
    out["comments"] = list(q.comments)
    if q.asked_by is not None:
        out["asked_by"] = q.asked_by
    return out


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


def report_dict(report: Report) -> dict[str, Any]:
    return {
        "window": {"since": report.since, "until": report.until, "days": report.days},
        "generated_at": report.generated_at,
        "stale_after_days": report.stale_after_days,
        "totals": asdict(report.totals),
        "unanswered": [
            {
                "topic": g.topic,
                "words": list(g.words),
                "count": g.count,
                "not_found": g.not_found,
                "down_votes": g.down_votes,
                "questions": [_question(q) for q in g.questions],
                "closest_pages": [_page(p) for p in g.closest_pages],
                "spaces": list(g.spaces),
            }
            for g in report.unanswered
        ],
        "not_grouped": report.not_grouped,
        "misleading_pages": [
            _page(
                m.page,
                weight=m.weight,
                down_votes=m.down_votes,
                answers=m.answers,
                explained=m.explained,
                comments=[_drop_none(asdict(c)) for c in m.comments],
            )
            for m in report.misleading_pages
        ],
        "stale_pages": [
            _page(s.page, citations=s.citations, days_since_modified=s.days_since_modified)
            for s in report.stale_pages
        ],
        "conflicts": [
            {
                "first": asdict(c.first),
                "other": asdict(c.other),
                "newer": c.newer,
                "count": c.count,
                "last_seen": c.last_seen,
                "question": c.question,
                "thread": c.thread,
            }
            for c in report.conflicts
        ],
        "most_used_pages": [
            _page(u.page, citations=u.citations, up_votes=u.up_votes, down_votes=u.down_votes)
            for u in report.most_used_pages
        ],
        "questions_per_space": [asdict(s) for s in report.questions_per_space],
        "questions_per_day": [asdict(d) for d in report.questions_per_day],
    }


def render_json(report: Report) -> str:
    return json.dumps(report_dict(report), ensure_ascii=False, indent=2) + "\n"
