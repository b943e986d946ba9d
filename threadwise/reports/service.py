"""The knowledge-gap report's one entry for the CLI and the front ends: read the window's turns (read-only,
beside `serve`), group the unanswered questions with the app's text-comparing embedder, build, render.

A front end needs two calls: `top_groups(5)` for a summary (the App Home, `/threadwise gaps`, a digest) and
`report_file("html")` for the full report as a file to upload.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
from sqlalchemy.orm import Session, sessionmaker

from threadwise.core.protocols import Embedder
from threadwise.reports.build import Options, build_report
from threadwise.reports.model import Report, TopicGroup
from threadwise.reports.rows import read_turns

FORMATS = ("md", "html", "json")
DEFAULT_DAYS = 30
_MEDIA = {"md": "text/markdown", "html": "text/html", "json": "application/json"}


@dataclass(frozen=True)
class ReportFile:
    name: str  # e.g. threadwise-gaps-2026-11-27.html
    media_type: str
    content: bytes


def render(report: Report, fmt: str) -> str:
    """The report as Markdown, HTML or JSON."""
    if fmt == "md":
        from threadwise.reports.render_md import render_markdown

        return render_markdown(report)
    if fmt == "html":
        from threadwise.reports.render_html import render_html

        return render_html(report)
    if fmt == "json":
        from threadwise.reports.render_json import render_json

        return render_json(report)
    raise ValueError(f"unknown report format {fmt!r}: use {', '.join(FORMATS)}")


class GapReports:
    """Builds the knowledge-gap report for a window of days, for admins."""

    def __init__(
        self,
        *,
        sessions: sessionmaker[Session],
        embedder: Embedder,
        stale_after_days: int = 730,
        shows_askers: bool = False,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        cache_size: int = 5000,
    ) -> None:
        """`embedder`: the one that compares texts (the app's similarity embedder); `shows_askers`: the data
        policy allows naming who asked (THREADWISE_REPORT_SHOWS_ASKERS)."""
        self._sessions = sessions
        self._embedder = embedder
        self._stale_after_days = stale_after_days
        self._shows_askers = shows_askers
        self._clock = clock
        # a question's vector is computed once per process (the App Home asks again and again), bounded
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size

    def report(
        self, *, days: int = DEFAULT_DAYS, since: datetime | None = None, until: datetime | None = None
    ) -> Report:
        """The report of the `days` up to now (or from `since`, up to `until`), questions of a minute ago
        included."""
        now = self._clock()
        end = until or now
        start = since or (end - timedelta(days=days))
        turns = read_turns(self._sessions, since=start, until=until)
        options = Options(
            since=start,
            until=end,
            now=now,
            stale_after_days=self._stale_after_days,
            shows_askers=self._shows_askers,
        )
        return build_report(turns, embed=self._embed, options=options)

    def top_groups(self, n: int = 5, *, days: int = DEFAULT_DAYS) -> list[TopicGroup]:
        """The `n` largest groups of unanswered questions: what a summary shows."""
        return list(self.report(days=days).unanswered[:n])

    def report_file(self, fmt: str = "html", *, days: int = DEFAULT_DAYS) -> ReportFile:
        """The full report as a file to upload (Slack `files_upload_v2`, a Teams attachment)."""
        report = self.report(days=days)
        return ReportFile(
            name=f"threadwise-gaps-{report.until[:10]}.{fmt}",
            media_type=_MEDIA[fmt] if fmt in _MEDIA else "text/plain",
            content=render(report, fmt).encode("utf-8"),
        )

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if missing:
            for text, vector in zip(missing, self._embedder.embed(missing), strict=True):
                self._vectors[text] = vector
        for text in texts:
            self._vectors.move_to_end(text)
        out = np.stack([self._vectors[t] for t in texts]) if texts else np.zeros((0, self._embedder.dim))
        while len(self._vectors) > self._cache_size:
            self._vectors.popitem(last=False)
        return out
