"""`threadwise report`: the knowledge-gap report for the wiki's owners (threadwise/reports/), as Markdown,
HTML or JSON, for the last N days. Read-only: it runs beside `serve`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from threadwise.wiring import Threadwise

Build = Callable[[], Threadwise]
FORMATS = ("md", "html", "json")  # as threadwise.reports.service.FORMATS, without importing it at start-up


def register(subparsers: Any, build: Build) -> None:
    p = subparsers.add_parser(
        "report",
        help="the knowledge-gap report: unanswered questions by topic, pages that mislead, stale pages, conflicts",
        description=__doc__,
    )
    window = p.add_mutually_exclusive_group()
    window.add_argument("--days", type=_days, default=30, help="the last N days up to now (default 30)")
    window.add_argument("--since", type=_moment, help="from this date or time (UTC), e.g. 2026-11-01")
    p.add_argument(
        "--format", choices=FORMATS, help="md, html or json (default: from --out's suffix, else md)"
    )
    p.add_argument("--out", type=Path, help="write to this file instead of standard output")
    p.set_defaults(func=lambda args: _report(build(), args))


def _days(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of days (1 or more)")
    return int(text)


def _moment(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date (YYYY-MM-DD) or an ISO time") from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def _format(args: argparse.Namespace) -> str:
    if args.format:
        return str(args.format)
    suffix = args.out.suffix.lower().lstrip(".") if args.out else ""
    return (
        {"markdown": "md", "htm": "html"}.get(suffix, suffix)
        if suffix in (*FORMATS, "markdown", "htm")
        else "md"
    )


def _report(tw: Threadwise, args: argparse.Namespace) -> int:
    from threadwise.reports.service import render

    report = tw.gap_reports.report(days=args.days, since=args.since)
    text = render(report, _format(args))
    if args.out is None:
        sys.stdout.write(text)
        return 0
    args.out.write_text(text, encoding="utf-8")
    t = report.totals
    print(
        f"Wrote {args.out}: {t.questions} questions, {t.not_found} not found, {t.down_votes} voted down, "
        f"{len(report.unanswered)} unanswered topics.",
        file=sys.stderr,
    )
    return 0
