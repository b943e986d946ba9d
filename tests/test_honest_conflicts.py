"""'Another source says otherwise' only for a real disagreement (conflicts.py): two versions of one thing, never
a row of another meeting; with both pages' dates and which is newer. Unit cases, then the thread that showed
the bogus conflict on the sample wiki, answered by the offline default end to end."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest

from threadwise.connectors.files import SAMPLE_WIKI_DIR, load_pages
from threadwise.core.answer.compose import Piece, mark_disagreements
from threadwise.core.answer.conflicts import disagreement_note, disagrees, title_dates
from threadwise.core.answer.spans import Span, candidate_spans
from threadwise.core.types import Evidence
from threadwise.db.conversations import ThreadKey
from threadwise.index.indexer import index_pages
from threadwise.settings import load_settings
from threadwise.wiring import Threadwise


def row(title: str, cells: tuple[tuple[str, str], ...], *, page: str, modified: str = "") -> Evidence:
    text = "Row 1 in Table 1: " + ", and ".join(f"{h} is {v}" for h, v in cells)
    return Evidence(
        id=f"{page}:0",
        page_id=page,
        space="S",
        page_title=title,
        url=f"https://wiki.example.com/{page}",
        page_version=1,
        kind="row",
        position=0,
        text=text,
        context_text=f"{title} {text}",
        table_no=1,
        row_no=1,
        cells=cells,
        last_modified=modified,
    )


def span_of(evidence: Evidence, source: int) -> Span:
    return candidate_spans(evidence, source, max_words=100)[0]


def test_titles_name_their_dates_in_the_usual_ways() -> None:
    assert title_dates("Weekly sync, October 14, 2024") == {date(2024, 10, 14)}
    assert title_dates("2024-10-07 Retro") == {date(2024, 10, 7)}
    assert title_dates("Besprechung am 14. Oktober 2024") == {date(2024, 10, 14)}
    assert title_dates("Protokoll 07.10.2024") == {date(2024, 10, 7)}
    assert title_dates("Vacation policy 2024") == frozenset()  # a year names a version, not an event


def test_rows_of_two_meetings_are_two_items_not_a_conflict() -> None:
    alice_7 = row(
        "Weekly sync, October 7, 2024",
        (
            ("Member", "Alice"),
            ("Task", "Collect support questions"),
            ("Due", "2024-10-11"),
            ("Status", "DONE"),
        ),
        page="7",
    )
    alice_14 = row(
        "Weekly sync, October 14, 2024",
        (
            ("Member", "Alice"),
            ("Task", "Prototype hybrid ranking"),
            ("Due", "2024-10-18"),
            ("Status", "DONE"),
        ),
        page="14",
    )
    assert not disagrees(span_of(alice_14, 0), span_of(alice_7, 1))


def test_rows_that_differ_in_every_column_but_their_subject_are_other_items() -> None:
    one = row("Team A plan", (("Member", "Alice"), ("Task", "Write docs"), ("Due", "Friday")), page="a")
    other = row("Team B plan", (("Member", "Alice"), ("Task", "Fix login"), ("Due", "Monday")), page="b")
    assert not disagrees(span_of(one, 0), span_of(other, 1))


def test_rows_that_share_a_vendor_but_name_other_models_are_other_items() -> None:
    """The dev split's bogus conflict: two test rows whose first cell is the vendor, about two Dell models."""
    cells = (("Vendor", "Dell"), ("Model", "Optiplex 980"), ("Tester", "Chen"), ("Result", "FAIL"))
    tested = row("OpenXT 7.0 hardware testing", cells, page="a")
    other = row(
        "OpenXT 7.0 hardware testing (rc2)",
        (("Vendor", "Dell"), ("Model", "Latitude 7490"), ("Tester", "Chen"), ("Result", "PASS")),
        page="b",
    )
    assert not disagrees(span_of(tested, 0), span_of(other, 1))
    again = row(
        "OpenXT 7.0 hardware testing (rc2)",
        (("Vendor", "Dell"), ("Model", "Optiplex 980"), ("Tester", "Chen"), ("Result", "PASS")),
        page="b",
    )
    assert disagrees(span_of(tested, 0), span_of(again, 1))  # one configuration, two results: a conflict


def test_two_versions_of_a_policy_disagree_and_the_note_says_which_is_newer() -> None:
    new = row(
        "Vacation policy",
        (("Entitlement", "Full-time"), ("Days", "30"), ("Carry over", "until March 31")),
        page="new",
        modified="2024-06-01T10:00:00Z",
    )
    old = row(
        "Vacation policy (2022)",
        (("Entitlement", "Full-time"), ("Days", "28"), ("Carry over", "until March 31")),
        page="old",
        modified="2022-01-15T09:00:00Z",
    )
    assert disagrees(span_of(new, 0), span_of(old, 1))
    pieces = mark_disagreements([Piece(span_of(new, 0)), Piece(span_of(old, 1))], [new, old], german=False)
    assert pieces[0].note == ""
    assert (
        pieces[1].note
        == "Another source says otherwise (last modified 2022-01-15, older than the first, of 2024-06-01):"
    )
    assert disagreement_note(new, old, german=True) == (
        "Eine andere Quelle sagt dazu anderes (zuletzt geändert 2024-06-01, neuer als die erste vom 2022-01-15):"
    )


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Threadwise]:
    data_dir: Path = tmp_path_factory.mktemp("conflicts")
    app = Threadwise(settings=load_settings(env={}, data_dir=data_dir))
    pages, failures = load_pages(SAMPLE_WIKI_DIR)
    assert not failures and not index_pages(app.index, pages).failures
    yield app


def test_a_follow_up_about_one_meeting_is_not_contradicted_by_another_meeting(app: Threadwise) -> None:
    key = ThreadKey("cli", "local", "c", "alice")
    first = app.conversations.ask(key, "What is Alice's action item from the October 14 meeting?")
    assert "hybrid" in first.answer.lower()
    due = app.conversations.ask(key, "and when is it due?")
    assert "2024-10-18" in due.answer
    assert "otherwise" not in due.answer and "2024-10-11" not in due.answer, due.answer
