"""The conversation service over a real SQLite file and a real index, through the CLI's composition root."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from threadwise.cli import main
from threadwise.connectors.files import SAMPLE_WIKI_DIR, load_pages
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
    app.store.delete_conversation(cid)
    assert cid not in [c for c, _k, _d in app.store.conversations()]
    assert (cid, key, True) in app.store.conversations(include_deleted=True)
    assert len(app.store.turns(cid)) == 1


def test_cli_ask_json_and_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("THREADWISE_EMBEDDER", "hashing")
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
