"""Contextualized evidence: presets, layout, neighbours of rows and passages, extraction failures."""

from __future__ import annotations

import pytest

from threadwise.core.ingest.contextualize import ALL, HDR, NONE, TTL, ContextParts, head, tail
from threadwise.core.ingest.extract import PageParseError, extract_evidence, extract_many
from threadwise.core.types import Evidence, Page

MEETING = (
    "<h2>Discussion</h2><p>We reviewed the roadmap.</p>"
    "<h2>Action items</h2><p>Tasks agreed in the meeting:</p>"
    "<table><tr><th>Member</th><th>Task</th></tr>"
    "<tr><td>Bob</td><td>Rerun the upgrade test</td></tr>"
    "<tr><td>Alice</td><td>Similarity function</td></tr></table>"
    "<p>All tasks are due before the next sync.</p>"
    "<ul><li>Next sync: October 21</li></ul>"
)


def meeting_page(body: str = MEETING) -> Page:
    return Page(
        id="163840114",
        space="ATLAS",
        title="Weekly sync, October 14, 2024",
        url="https://wiki.example.com/spaces/ATLAS/pages/163840114/Weekly+sync",
        body=body,
        version=3,
        last_modified="2024-10-15T09:12:00Z",
        ancestors=("Team Atlas", "Meeting notes"),
    )


def by_text(evidence: list[Evidence], start: str) -> Evidence:
    return next(e for e in evidence if e.text.startswith(start))


def test_presets_and_names_round_trip() -> None:
    assert ContextParts.from_name("ALL") == ALL == ContextParts()
    assert ContextParts.from_name("none") == NONE
    assert ContextParts.from_name("TTL") == TTL and TTL.title and not TTL.heading
    assert ContextParts.from_name("ttl+hdr") == ContextParts(True, False, True, False, False)
    for name in ("ALL", "NONE", "TTL", "HDR", "BEF", "AFT", "BRC", "TTL,HDR", "TTL,BRC,HDR,BEF"):
        assert ContextParts.from_name(name).name == name
    with pytest.raises(ValueError, match="TTL"):
        ContextParts.from_name("TITLE")
    with pytest.raises(ValueError):
        ContextParts.from_name("")


def test_a_row_carries_title_breadcrumb_heading_and_the_text_around_its_table() -> None:
    evidence = extract_evidence(meeting_page())
    alice = by_text(evidence, "Row 2 in Table 1")
    assert alice.context_text == (
        "Page: Weekly sync, October 14, 2024 (in Team Atlas > Meeting notes) | Section: Action items\n"
        "Row 2 in Table 1: Member is Alice, and Task is Similarity function\n"
        "Before: Tasks agreed in the meeting:\n"
        "After: All tasks are due before the next sync."
    )
    assert alice.text == "Row 2 in Table 1: Member is Alice, and Task is Similarity function"
    assert (alice.kind, alice.table_no, alice.row_no, alice.heading) == ("row", 1, 2, "Action items")
    assert alice.cells == (("Member", "Alice"), ("Task", "Similarity function"))
    assert (alice.page_id, alice.space, alice.page_version, alice.url) == (
        "163840114",
        "ATLAS",
        3,
        "https://wiki.example.com/spaces/ATLAS/pages/163840114/Weekly+sync",
    )
    assert alice.id == f"163840114:{alice.position}" and alice.last_modified == "2024-10-15T09:12:00Z"


def test_the_whole_table_has_the_same_neighbours_as_its_rows() -> None:
    evidence = extract_evidence(meeting_page())
    table = next(e for e in evidence if e.kind == "table")
    assert table.context_text.endswith(
        "Before: Tasks agreed in the meeting:\nAfter: All tasks are due before the next sync."
    )


def test_text_after_a_table_sees_the_table_before_it() -> None:
    evidence = extract_evidence(meeting_page())
    footer = by_text(evidence, "All tasks are due")
    assert "Before: Row 1 in Table 1: Member is Bob" in footer.context_text
    assert footer.context_text.endswith("After: - Next sync: October 21")


def test_positions_are_page_order_and_ids_are_unique() -> None:
    evidence = extract_evidence(meeting_page())
    assert [e.kind for e in evidence] == ["passage", "passage", "table", "row", "row", "passage", "list"]
    assert [e.position for e in evidence] == list(range(7))
    assert len({e.id for e in evidence}) == 7


def test_each_part_can_be_switched_off() -> None:
    page = meeting_page()
    bare = by_text(extract_evidence(page, parts=NONE), "Row 2")
    assert bare.context_text == bare.text
    title_only = by_text(extract_evidence(page, parts=TTL), "Row 2")
    assert title_only.context_text == "Page: Weekly sync, October 14, 2024\n" + bare.text
    heading_only = by_text(extract_evidence(page, parts=HDR), "Row 2")
    assert heading_only.context_text == "Section: Action items\n" + bare.text
    crumbs = by_text(extract_evidence(page, parts=ContextParts.from_name("BRC,AFT")), "Row 2")
    assert (
        crumbs.context_text
        == f"In: Team Atlas > Meeting notes\n{bare.text}\nAfter: All tasks are due before the next sync."
    )


def test_first_and_last_elements_have_no_missing_neighbour_lines() -> None:
    evidence = extract_evidence(meeting_page())
    assert "Before:" not in evidence[0].context_text
    assert "After:" not in evidence[-1].context_text


def test_neighbours_are_capped_at_word_boundaries_keeping_the_near_end() -> None:
    long_intro = "Background " + "lorem ipsum " * 100 + "and finally the tasks:"
    body = f"<p>{long_intro}</p><table><tr><th>A</th></tr><tr><td>x</td></tr></table>"
    row = by_text(extract_evidence(meeting_page(body), neighbour_chars=60), "Row 1")
    before = row.context_text.split("Before: ")[1]
    assert before.startswith("… ") and before.endswith("and finally the tasks:")
    assert len(before) <= 62 and "Background" not in before


def test_head_and_tail_trim_at_words() -> None:
    assert head("one two three four", 9) == "one two …"
    assert tail("one two three four", 11) == "… three four"
    assert tail("one two three four", 8) == "… four"
    assert head("short  text\nhere", 100) == "short text here"
    assert tail("averyveryverylongword", 5) == "… gword"  # no space to cut at: the last 5 characters


def test_evidence_comes_before_its_neighbours_so_truncation_drops_context_first() -> None:
    body = "<p>" + "Before text. " * 50 + "</p><p>The evidence.</p>"
    evidence = extract_evidence(meeting_page(body), max_chars=200)
    last = evidence[-1]
    assert last.context_text.index("The evidence.") < last.context_text.index("Before:")


def test_tables_and_rows_can_be_left_out_without_changing_ids() -> None:
    page = meeting_page()
    full = {e.id: e for e in extract_evidence(page)}
    no_rows = extract_evidence(page, index_rows=False)
    no_tables = extract_evidence(page, index_tables=False)
    assert {e.kind for e in no_rows} == {"passage", "table", "list"}
    assert {e.kind for e in no_tables} == {"passage", "row", "list"}
    assert all(full[e.id] == e for e in no_rows + no_tables)


def test_unusable_pages_raise_a_clear_error() -> None:
    with pytest.raises(PageParseError, match="empty"):
        extract_evidence(meeting_page("   "))
    toc = '<ac:structured-macro ac:name="toc" /><p><br/></p>'
    with pytest.raises(PageParseError, match="no text"):
        extract_evidence(meeting_page(toc))


def test_extract_many_skips_and_reports_bad_pages() -> None:
    good = meeting_page()
    bad = Page(
        id="2", space="ATLAS", title="Empty page", url="", body='<ac:structured-macro ac:name="children"/>'
    )
    evidence, failures = extract_many([bad, good], parts=TTL)
    assert len(failures) == 1 and failures[0].page_id == "2" and failures[0].title == "Empty page"
    assert "no text" in failures[0].reason
    assert {e.page_id for e in evidence} == {"163840114"}
    assert evidence[0].context_text.startswith("Page: Weekly sync")


def test_a_wrong_linearizer_is_a_configuration_error_not_a_page_failure() -> None:
    with pytest.raises(ValueError, match="linearizer"):
        extract_many([meeting_page()], linearizer="yaml")


def test_user_names_resolve_mentions() -> None:
    body = '<p><ac:link><ri:user ri:account-id="abc-123" /></ac:link> owns this.</p>'
    evidence = extract_evidence(meeting_page(body), user_names={"abc-123": "Alice Weber"})
    assert evidence[0].text == "@Alice Weber owns this."
