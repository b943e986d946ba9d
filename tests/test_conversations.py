"""The conversation service over a real SQLite file and a real index, through the CLI's composition root."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from threadwise.chat.conversations import TurnView
from threadwise.chat.pressed import NOT_HERE, NOT_YOURS, Pressed, pressed_turn, suggested
from threadwise.cli import main
from threadwise.connectors.files import SAMPLE_WIKI_DIR, load_pages
from threadwise.core.types import Evidence
from threadwise.db.conversations import ThreadKey
from threadwise.index.indexer import index_pages
from threadwise.settings import load_settings
from threadwise.wiring import Threadwise

ENV = {"THREADWISE_EMBEDDER": "hashing"}


def app_over_sample_wiki(data_dir: Path) -> Threadwise:
    app = Threadwise(settings=load_settings(env=ENV, data_dir=data_dir))
    pages, failures = load_pages(SAMPLE_WIKI_DIR)
    assert not failures
    index_pages(app.index, pages)
    return app


def test_answers_cite_sources_and_survive_a_restart(tmp_path: Path) -> None:
    app = app_over_sample_wiki(tmp_path)
    key = ThreadKey("slack", "T1", "C1", "1700000000.000100")
    first = app.conversations.ask(key, "What is Alice's action item from the October 14 meeting?", user="U1")
    assert first.error is None and not first.not_found
    assert first.cited and all(1 <= n <= len(first.sources) for n in first.cited)
    assert first.sources[first.cited[0] - 1].title.startswith("Weekly sync, October 14")
    follow = app.conversations.ask(key, "and when is it due?", user="U1")
    assert follow.completed_question != follow.question  # completed from the thread's history
    assert "October 14" in follow.completed_question

    # a new process over the same data folder sees the same conversation
    again = Threadwise(settings=load_settings(env=ENV, data_dir=tmp_path))
    history = again.conversations.history(key)
    assert [t.turn_id for t in history] == [first.turn_id, follow.turn_id]
    assert again.conversations.knows_thread(key)
    assert not again.conversations.knows_thread(ThreadKey("slack", "T1", "C1", "other"))
    trace = again.conversations.trace(follow.turn_id)
    assert trace["completed_question"] == follow.completed_question
    assert trace["retrieval"]["lexical"] and trace["retrieval"]["fused"]


def test_explain_is_cached_and_votes_change(tmp_path: Path) -> None:
    app = app_over_sample_wiki(tmp_path)
    key = ThreadKey("cli", "local", "me", "t1")
    turn = app.conversations.ask(key, "Who is on call for a severity 1 incident?")
    first = app.conversations.explain(turn.turn_id)
    assert not first.cached and first.result["clusters"]
    assert abs(sum(c["share"] for c in first.result["clusters"]) - 1.0) < 1e-6
    second = app.conversations.explain(turn.turn_id)
    assert second.cached and second.result == first.result

    app.conversations.vote(turn.turn_id, "U1", "up")
    app.conversations.vote(turn.turn_id, "U1", "down", "wrong page")
    app.conversations.vote(turn.turn_id, "U2", "up")
    summary = app.conversations.feedback_summary()
    assert (summary["up"], summary["down"]) == (1, 1)
    assert summary["latest_down"][0]["comment"] == "wrong page"


def test_empty_index_gets_a_friendly_reply(tmp_path: Path) -> None:
    app = Threadwise(settings=load_settings(env=ENV, data_dir=tmp_path))
    view = app.conversations.ask(ThreadKey("cli", "l", "c", "t"), "anything?")
    assert view.error and "no Confluence space has been synced" in view.answer


def test_deleting_a_conversation_hides_it_but_keeps_it(tmp_path: Path) -> None:
    app = app_over_sample_wiki(tmp_path)
    key = ThreadKey("cli", "l", "c", "t")
    app.conversations.ask(key, "How do I set up the dev environment?")
    cid = app.store.conversation_id(key, create=False)
    assert cid is not None
    app.store.delete_conversation(cid)
    assert cid not in [c for c, _k, _d in app.store.conversations()]
    assert (cid, key, True) in app.store.conversations(include_deleted=True)
    assert len(app.store.turns(cid)) == 1


def test_cli_ask_json_and_trace(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    hashing_embedder: None,
) -> None:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "THREADWISE_LLM_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    args = [
        "--data-dir",
        str(tmp_path),
        "ask",
        "What BIOS version did the test report use?",
        "--json",
        "--docs",
        str(SAMPLE_WIKI_DIR),
    ]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["cited_sources"] and out["sources"][0]["url"].startswith("https://wiki.example.com/")
    assert set(out["sources"][0]) >= {"page_id", "title", "url", "space", "kind"}
    assert main(["--data-dir", str(tmp_path), "trace", str(out["turn_id"])]) == 0
    assert "completed question" in capsys.readouterr().out


def old_source(e: Evidence, number: int) -> dict[str, object]:
    """A source as versions before the shared evidence form stored it: cells as lists, None table numbers."""
    return {
        "number": number,
        "evidence_id": e.id,
        "page_id": e.page_id,
        "title": e.page_title,
        "url": e.url,
        "space": e.space,
        "kind": e.kind,
        "label": e.label,
        "text": e.text,
        "context_text": e.context_text,
        "last_modified": e.last_modified,
        "position": e.position,
        "version": e.page_version,
        "heading": e.heading,
        "table_no": e.table_no,
        "row_no": e.row_no,
        "cells": [list(c) for c in e.cells],
        "scores": {"final": 0.5},
    }


def test_answers_stored_by_earlier_versions_still_explain(tmp_path: Path) -> None:
    app = app_over_sample_wiki(tmp_path)
    question = "What is Alice's action item from the October 14 meeting?"
    fresh = app.conversations.ask(ThreadKey("cli", "l", "c", "new"), question)
    evidences = app.retriever.retrieve(fresh.completed_question).evidences
    assert any(e.cells for e in evidences) and any(e.table_no is None for e in evidences)
    cid = app.store.conversation_id(ThreadKey("cli", "l", "c", "old"))
    assert cid is not None
    old_turn = app.store.add_turn(
        cid,
        asked_by="",
        question=question,
        completed_question=fresh.completed_question,
        answer=fresh.answer,
        not_found=fresh.not_found,
        error=None,
        sources=[old_source(e, n) for n, e in enumerate(evidences, start=1)],
        cited=fresh.cited,
        follow_ups=[],
        trace={},
        timings={},
        config={},
    )
    stored = app.store.turn(old_turn)
    assert stored is not None and [Evidence.from_dict(s) for s in stored.sources] == evidences
    old = app.conversations.explain(old_turn)
    assert old.error is None and old.result["clusters"]
    new = app.conversations.explain(fresh.turn_id)
    assert old.result["clusters"] == new.result["clusters"]  # the same attribution as for a fresh answer


def test_the_stored_form_of_an_evidence_reads_back() -> None:
    row = Evidence(
        id="p:3",
        page_id="p",
        space="S",
        page_title="Weekly sync",
        url="https://wiki/p",
        page_version=4,
        kind="row",
        position=3,
        text="Row 1 in Table 2: Member is Alice",
        context_text="Weekly sync / Actions / Row 1 …",
        heading="Actions",
        table_no=2,
        row_no=1,
        cells=(("Member", "Alice"), ("Due", "Oct 21")),
        last_modified="2024-10-14T10:00:00Z",
    )
    stored = row.to_dict()
    assert all(isinstance(v, str | int) for v in stored.values())  # Chroma metadata holds only scalars
    assert Evidence.from_dict(json.loads(json.dumps(stored))) == row
    passage = Evidence("p:0", "p", "S", "T", "u", 1, "passage", 0, "text", "T / text")
    assert "table_no" not in passage.to_dict() and Evidence.from_dict(passage.to_dict()) == passage


def test_a_press_is_honoured_only_in_the_answers_own_conversation_for_who_may_see_it(tmp_path: Path) -> None:
    app = app_over_sample_wiki(tmp_path)
    here = ThreadKey("teams", "T1", "19:c@thread.tacv2", "1")
    turn = app.conversations.ask(here, "Who is on call for a severity 1 incident?")
    asked: list[int] = []

    def press(value: object, key: ThreadKey = here, *, allowed: bool = True) -> Pressed:
        def may_see(seen: TurnView) -> bool:
            asked.append(seen.turn_id)
            return allowed

        return pressed_turn(app.conversations, value, key=key, may_see=may_see)

    assert press(turn.turn_id).turn == turn and press(str(turn.turn_id)).turn == turn
    elsewhere = [ThreadKey("teams", "T1", "19:c@thread.tacv2", "2"), ThreadKey("slack", "T1", "C1", "1")]
    for key in elsewhere:  # another thread of the channel, another platform: as if there were no such answer
        assert press(turn.turn_id, key) == Pressed(None, NOT_HERE) == press(turn.turn_id + 1000, key)
    assert asked == [turn.turn_id, turn.turn_id]  # who pressed is only asked about answers of here
    assert press(turn.turn_id, allowed=False) == Pressed(None, NOT_YOURS)
    for junk in (None, "", "abc", "-1", "0", 0, True, 2**63, "9" * 30, 1.0, [turn.turn_id]):
        assert press(junk) == Pressed(None)  # no answer id at all: nothing to say
    offering = replace(turn, follow_ups=["first?", "second?", "third?", "fourth?"])  # the first 3 are shown
    assert [suggested(offering, n, shown=3) for n in (1, "2", 3, 4, "0", True, "x")] == [
        "first?",
        "second?",
        "third?",
        *[None] * 4,
    ]
