"""Who last edited a page: synced from the local Confluence with the page, kept with its evidence and the
answers that cite it, and shown in the knowledge-gap report beside the page (JSON, Markdown, HTML)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.fake_confluence import FakeConfluence, tree_wiki
from threadwise.connectors.files import page_from_json
from threadwise.core.types import Evidence
from threadwise.db.conversations import ThreadKey
from threadwise.reports.service import render
from threadwise.settings import load_settings
from threadwise.wiring import Threadwise

ON_CALL = "113"
QUESTION = "How fast does the on-call engineer answer pages?"


def _pages(report_json: str) -> dict[str, dict[str, object]]:
    return {p["page_id"]: p for p in json.loads(report_json)["most_used_pages"]}


def test_a_sync_stores_the_last_editor_and_the_report_shows_it(tmp_path: Path) -> None:
    with FakeConfluence(pages=tree_wiki(), context_path="/confluence") as fake:
        fake.people.add_user("jane", "jane@example.com")
        fake.edit_page(ON_CALL, by="jane")
        env = {
            "THREADWISE_DATA_DIR": str(tmp_path / "data"),
            "CONFLUENCE_URL": fake.url,
            "CONFLUENCE_PERSONAL_TOKEN": "pat-secret",
            "THREADWISE_EMBEDDER": "hashing",
            "THREADWISE_LLM": "off",
        }
        tw = Threadwise(settings=load_settings(env=env))
        tw.admin.add_space("DOCS", everyone_may_view=True)
        assert all(r.status == "ok" for r in tw.admin.sync())
        hits = tw.index.search_lexical("on-call engineer answers pages", k=3)
        assert hits and hits[0].evidence.page_id == ON_CALL and hits[0].evidence.last_editor == "Jane"

        turn = tw.conversations.ask(ThreadKey("slack", "T1", "C1", "1700000001.000100"), QUESTION, user="U1")
        assert not turn.not_found
        on_call = _pages(render(tw.gap_reports.report(), "json"))[ON_CALL]
        assert on_call["last_editor"] == "Jane"
        assert "last edited by Jane" in render(tw.gap_reports.report(), "md")
        assert "last edited by Jane" in render(tw.gap_reports.report(), "html")

        # the next edit is a new version: re-synced, it names its editor, and the report the newest version's
        fake.people.add_user("omar", "omar@example.com")
        fake.edit_page(
            ON_CALL, body="<p>The on-call engineer answers pages within 10 minutes.</p>", by="omar"
        )
        assert all(r.status == "ok" for r in tw.admin.sync())
        tw.conversations.ask(ThreadKey("slack", "T1", "C1", "1700000002.000100"), QUESTION, user="U1")
        assert _pages(render(tw.gap_reports.report(), "json"))[ON_CALL]["last_editor"] == "Omar"


def test_a_page_nobody_is_named_for_has_no_editor_key() -> None:
    """Evidence stored before editors were kept loads with none, and an unknown editor is not stored."""
    old_row = {
        "evidence_id": "113:0",
        "page_id": "113",
        "space": "DOCS",
        "title": "On-call",
        "url": "https://wiki.example.com/113",
        "version": 3,
        "kind": "paragraph",
        "text": "Pages within 15 minutes.",
        "last_modified": "2024-11-15T00:00:00.000Z",
    }
    old = Evidence.from_dict(old_row)
    assert old.last_editor == "" and "last_editor" not in old.to_dict()
    named = Evidence.from_dict({**old_row, "last_editor": "Jane"})
    assert named.last_editor == "Jane" and Evidence.from_dict(named.to_dict()) == named


def test_page_files_may_name_an_editor() -> None:
    """The sample wiki and ConfQuestions name nobody; a file may, as `last_editor` or REST's `version.by`."""
    base = {"id": "1", "title": "T", "url": "", "space": "S", "content": "<p>x</p>"}
    assert page_from_json(base).last_editor == ""
    assert page_from_json({**base, "last_editor": "Jane"}).last_editor == "Jane"
    by = {"number": 4, "by": {"type": "known", "publicName": "jd", "displayName": "Jane Doe"}}
    page = page_from_json({**base, "version": by})
    assert (page.last_editor, page.version) == ("Jane Doe", 4)
