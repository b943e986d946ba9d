"""The platform-neutral source line: each cited page's last-modified date and whether it is possibly outdated."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from tests.support.views import source_view, turn_citing
from threadwise.chat.conversations import ConversationService, SourceView
from threadwise.chat.turn_views import PageAge, SourceLine, modified_at, page_lines
from threadwise.cli.qa_cmds import render_turn
from threadwise.connectors.files import SAMPLE_WIKI_DIR, load_pages
from threadwise.db.conversations import ThreadKey
from threadwise.index.indexer import index_pages
from threadwise.settings import load_settings
from threadwise.wiring import Threadwise

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


def at(when: datetime, days: int = 730) -> PageAge:
    return PageAge(stale_after_days=days, clock=lambda: when)


def source(number: int, page: str, modified: str, *, outdated: bool = False) -> SourceView:
    return source_view(
        number, page, title="" if page == "untitled" else None, modified=modified, outdated=outdated
    )


def test_a_page_is_possibly_outdated_only_past_the_configured_age() -> None:
    age = at(NOW)
    assert not age.outdated("2024-11-28T12:00:00Z")  # 729 days
    assert not age.outdated("2024-11-27T12:00:00Z")  # exactly 730 days: not yet
    assert age.outdated("2024-11-27T11:59:00Z")
    assert age.outdated("2024-10-14")  # a bare date counts as UTC midnight
    assert age.outdated("2024-10-14T12:00:00+02:00")
    assert not age.outdated("") and not age.outdated("last Tuesday")  # unknown is never called outdated
    assert not PageAge(stale_after_days=5000, clock=lambda: NOW).outdated("2015-01-01")
    assert modified_at("2024-10-14T10:00:00") == datetime(2024, 10, 14, 10, tzinfo=UTC)


def test_source_lines_group_pages_and_carry_date_and_mark() -> None:
    lines = page_lines(
        [
            source(1, "a", "2024-05-03T10:00:00Z", outdated=True),
            source(2, "b", "2026-10-01T08:00:00Z"),
            source(3, "a", "2024-05-03T10:00:00Z", outdated=True),
            source(4, "untitled", "not a date"),
        ]
    )
    assert lines == [
        SourceLine((1, 3), "Page a", "https://wiki.example/a", "ENG", "2024-05-03T10:00:00Z", True),
        SourceLine((2,), "Page b", "https://wiki.example/b", "ENG", "2026-10-01T08:00:00Z", False),
        SourceLine((4,), "Label untitled", "https://wiki.example/untitled", "ENG", "", False),
    ]
    assert [line.date for line in lines] == ["2024-05-03", "2026-10-01", ""]


def test_the_cli_lists_each_cited_page_with_its_date_and_the_mark() -> None:
    view = turn_citing(
        source(1, "a", "2024-10-14T09:00:00Z", outdated=True),
        source(2, "b", "2026-10-01T08:00:00Z"),
        source_view(3, "untitled", title="", modified="", space=""),
    )
    lines = render_turn(view, hint="h").splitlines()
    assert "  [1] Page a — ENG — updated 2024-10-14 — possibly outdated — https://wiki.example/a" in lines
    assert "  [2] Page b — ENG — updated 2026-10-01 — https://wiki.example/b" in lines
    assert "  [3] Label untitled — https://wiki.example/untitled" in lines  # no space, no date: left out


def test_the_service_marks_old_cited_pages_with_the_configured_age(tmp_path: Path) -> None:
    app = Threadwise(
        settings=load_settings(
            env={"THREADWISE_EMBEDDER": "hashing", "THREADWISE_STALE_AFTER_DAYS": "400"}, data_dir=tmp_path
        )
    )
    assert app.conversations.page_age.stale_after_days == 400  # read once, by the composition root
    pages, failures = load_pages(SAMPLE_WIKI_DIR)
    assert not failures
    index_pages(app.index, pages)
    # the sample's on-call page was modified 2024-09-30: 457 days before this clock, 92 before the second
    for when, outdated in (
        (datetime(2025, 12, 31, tzinfo=UTC), True),
        (datetime(2024, 12, 31, tzinfo=UTC), False),
    ):
        service = ConversationService(
            pipeline=app.pipeline,
            store=app.store,
            index=app.index,
            page_age=at(when, 400),
        )
        view = service.ask(ThreadKey("cli", "l", "c", str(when)), "Who is on call for a severity 1 incident?")
        cited = view.cited_sources[0]
        assert cited.title == "On-call and incident policy" and cited.last_modified.startswith("2024-09-30")
        assert cited.possibly_outdated is outdated
        # a turn read back from the store (Explain, a button pressed later) is marked the same way
        again = service.get_turn(view.turn_id)
        assert again is not None and again.cited_sources[0].possibly_outdated is outdated
