"""Loading page folders: both JSON shapes, bad files as failures, the shipped sample wiki, ConfQuestions."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

from threadwise.connectors.files import SAMPLE_WIKI_DIR, load_pages, page_from_json, page_id_from_url
from threadwise.core.ingest.extract import extract_many

CONFQUESTIONS = Path(
    os.environ.get("CONFQUESTIONS_DIR", Path(__file__).resolve().parents[2] / "shared" / "confquestions")
)


def write(folder: Path, name: str, data: object) -> None:
    (folder / name).write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")


CONFQUESTIONS_SHAPE = {
    "id": "confluence-001",
    "title": "Draft v3 : OpenXT - Governance and Process",
    "url": "https://openxt.atlassian.net/wiki/spaces/~cclark/pages/36503555/Draft+v3+:+OpenXT+-+Governance+and+Process",
    "space": "~cclark",
    "date": "2024-11-15",
    "content": "<p>Please see these documents.</p>",
    "disclaimer": "Users of this benchmark dataset are advised to check Atlassian's documentation.",
}


def test_page_id_from_url() -> None:
    assert page_id_from_url(CONFQUESTIONS_SHAPE["url"]) == "36503555"
    assert page_id_from_url("https://wiki.example.com/spaces/ATLAS/pages/163840114") == "163840114"
    assert page_id_from_url("https://x.example/wiki/pages/viewpage.action?pageId=42&src=y") == "42"
    assert page_id_from_url("https://x.example/wiki/display/OD/Getting+Started") is None
    assert page_id_from_url("") is None


def test_confquestions_shape_uses_the_id_in_the_url() -> None:
    page = page_from_json(CONFQUESTIONS_SHAPE)
    assert (page.id, page.space, page.title, page.version) == (
        "36503555",
        "~cclark",
        "Draft v3 : OpenXT - Governance and Process",
        1,
    )
    assert page.last_modified == "2024-11-15" and page.body == "<p>Please see these documents.</p>"
    assert page.ancestors == () and page.labels == ()


def test_sample_shape_reads_version_ancestors_and_labels() -> None:
    data = {
        "id": "atlas-x",
        "title": "Runbook",
        "url": "",
        "space": "ATLAS",
        "version": {"number": 7},
        "last_modified": "2024-10-15T09:12:00Z",
        "ancestors": ["Team Atlas", {"title": "Policies"}],
        "labels": ["policy", {"name": "ops"}],
        "content": "<p>x</p>",
    }
    page = page_from_json(data)
    assert (page.id, page.version, page.last_modified) == ("atlas-x", 7, "2024-10-15T09:12:00Z")
    assert page.ancestors == ("Team Atlas", "Policies") and page.labels == ("policy", "ops")


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ([1, 2], "JSON object"),
        ({"title": "no body"}, "content"),
        ({"content": "<p>x</p>"}, "page id"),
        ({"id": "a", "content": "<p>x</p>", "version": "seven"}, "version"),
    ],
)
def test_not_a_page_is_a_value_error(data: object, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        page_from_json(data)


def test_load_pages_reports_bad_files_and_keeps_the_rest(tmp_path: Path) -> None:
    write(tmp_path, "a.json", CONFQUESTIONS_SHAPE)
    write(tmp_path, "b.json", "{ not json")
    write(tmp_path, "c.json", [1, 2, 3])
    write(tmp_path, "d.json", {**CONFQUESTIONS_SHAPE, "title": "Same page again"})
    write(tmp_path, "e.json", {"id": "x", "title": "No body"})
    write(tmp_path, "notes.txt", "not a page file")
    (tmp_path / "f.json").write_bytes(b"\xff\xfe\x00bad")

    pages, failures = load_pages(tmp_path)

    assert [p.id for p in pages] == ["36503555"]
    reasons = {f.page_id: f.reason for f in failures}
    assert set(reasons) == {"b", "c", "36503555", "e", "f"}
    assert "unreadable" in reasons["b"] and "duplicate page id 36503555" in reasons["36503555"]
    assert "JSON object" in reasons["c"] and "content" in reasons["e"]
    assert next(f for f in failures if f.page_id == "36503555").title == "Same page again"


def test_file_id_is_the_fallback_when_there_is_no_url(tmp_path: Path) -> None:
    write(tmp_path, "only-name.json", {"title": "T", "content": "<p>x</p>"})
    write(tmp_path, "with-id.json", {"id": "my-id", "title": "T", "content": "<p>x</p>"})
    pages, failures = load_pages(tmp_path)
    assert [p.id for p in pages] == ["only-name", "my-id"] and failures == []


def test_missing_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_pages(tmp_path / "nope")


# ---- the shipped sample wiki ---------------------------------------------------------------------------


def test_sample_wiki_pages_load_and_all_yield_evidence() -> None:
    pages, failures = load_pages(SAMPLE_WIKI_DIR)
    assert failures == [] and len(pages) >= 5
    assert {p.space for p in pages} == {"ATLAS"}
    assert all(p.url.startswith("https://wiki.example.com/spaces/ATLAS/pages/" + p.id + "/") for p in pages)
    assert all(p.ancestors[0] == "Team Atlas" and p.labels and p.version >= 1 for p in pages)
    evidence, failures = extract_many(pages)
    assert failures == []
    assert {p.id for p in pages} == {e.page_id for e in evidence}
    assert {"passage", "list", "table", "row"} <= {e.kind for e in evidence}


def test_sample_wiki_answers_the_quick_start_question() -> None:
    """README: "What is Alice's action item from the October 14 meeting?" must have one evidence answering it."""
    evidence, _ = extract_many(load_pages(SAMPLE_WIKI_DIR)[0])
    rows = [
        e
        for e in evidence
        if e.kind == "row" and ("Member", "Alice") in e.cells and "October 14" in e.context_text
    ]
    assert len(rows) == 1
    assert "Similarity function" in rows[0].text and "Section: Action items" in rows[0].context_text
    assert "Before: We agreed on the following action items" in rows[0].context_text


def test_sample_wiki_has_german_and_macro_rich_pages() -> None:
    evidence, _ = extract_many(load_pages(SAMPLE_WIKI_DIR)[0])
    texts = "\n".join(e.text for e in evidence)
    assert "Urlaubstage" in texts  # a German page
    assert "Warning: Never restart the production database" in texts  # warning panel
    assert "```\ngit clone" in texts  # code block
    assert "- [ ] @alice.weber book a room" in texts  # task list with a mention
    assert "ATLAS-239" in texts and "is FAIL" in texts  # Jira key, status lozenge in a table


# ---- ConfQuestions (read from the shared folder, never copied into the repository) ---------------------


@pytest.mark.skipif(not (CONFQUESTIONS / "documents").is_dir(), reason="ConfQuestions is not available here")
def test_every_confquestions_page_yields_evidence_or_a_reported_failure(
    capsys: pytest.CaptureFixture[str],
) -> None:
    pages, load_failures = load_pages(CONFQUESTIONS / "documents")
    assert len(pages) + len(load_failures) == 215 and load_failures == []
    evidence, failures = extract_many(pages)
    with_evidence = {e.page_id for e in evidence}
    assert with_evidence | {f.page_id for f in failures} == {p.id for p in pages}
    assert all(f.reason for f in failures)
    kinds = Counter(e.kind for e in evidence)
    assert set(kinds) == {"passage", "list", "table", "row"}
    assert all(e.text.strip() and e.context_text.startswith("Page: ") for e in evidence)
    assert len({e.id for e in evidence}) == len(evidence)
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_a_folder_is_a_page_source_indexed_by_the_shared_road(tmp_path: Path) -> None:
    """What the Confluence sync does with a `PageSource` (list, then fetch and `index_page` each page) works on
    a folder of page files: the place where other sources plug in."""
    from tests.support.folder_source import FolderSource
    from threadwise.core.protocols import PageSource
    from threadwise.core.types import Page, PageFailure
    from threadwise.index.indexer import index_page
    from threadwise.index.store import EvidenceIndex
    from threadwise.models.embedders import HashingEmbedder

    source: PageSource = FolderSource(SAMPLE_WIKI_DIR)
    refs = source.list_pages("ATLAS")
    assert len(refs) == 6 and source.list_pages("OTHER") == [] and len(source.list_pages("")) == 6
    index = EvidenceIndex(directory=tmp_path / "index", embedder=HashingEmbedder())
    for ref in refs:
        page = source.get_page(ref.id, space="ATLAS", ancestors=ref.ancestors)
        assert isinstance(page, Page) and (page.title, page.version) == (ref.title, ref.version)
        assert index_page(index, page) is True
    index.flush()
    assert set(index.page_states()) == {r.id for r in refs}
    missing = source.get_page("404")
    assert isinstance(missing, PageFailure) and "no such page" in missing.reason
