"""Conversation state on a real PostgreSQL through THREADWISE_DATABASE_URL (the admin and sync state runs on it
in tests/test_admin.py, schema upgrades in tests/test_schema.py)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from threadwise.connectors.files import SAMPLE_WIKI_DIR, load_pages
from threadwise.db.base import make_engine, make_sessions
from threadwise.db.conversations import ConversationStore, ThreadKey
from threadwise.db.schema import upgrade
from threadwise.index.indexer import index_pages
from threadwise.settings import load_settings
from threadwise.wiring import Threadwise


def test_conversations_votes_and_explanations_live_in_postgresql(postgres_url: str, tmp_path: Path) -> None:
    env = {"THREADWISE_EMBEDDER": "hashing", "THREADWISE_DATABASE_URL": postgres_url}
    app = Threadwise(settings=load_settings(env=env, data_dir=tmp_path))
    assert app.sessions.kw["bind"].dialect.name == "postgresql"
    pages, _ = load_pages(SAMPLE_WIKI_DIR)
    index_pages(app.index, pages)
    key = ThreadKey(
        "teams", "tenant-1", "19:" + "c" * 90 + "@thread.tacv2", "1700000000000"
    )  # long Teams ids
    first = app.conversations.ask(
        key, "What is Alice's action item from the October 14 meeting?", user="29:" + "u" * 80
    )
    follow = app.conversations.ask(key, "and when is it due?", user="29:" + "u" * 80)
    assert first.error is None and first.cited and "October 14" in follow.completed_question
    explained = app.conversations.explain(first.turn_id)
    app.conversations.vote(first.turn_id, "U1", "down", "wrong page")
    app.conversations.vote(first.turn_id, "U2", "up")

    # another process (a second replica) with its own engine sees all of it
    other = Threadwise(settings=load_settings(env=env, data_dir=tmp_path / "replica"))
    assert [t.turn_id for t in other.conversations.history(key)] == [first.turn_id, follow.turn_id]
    again = other.conversations.explain(first.turn_id)
    assert again.cached and again.result == explained.result
    summary = other.conversations.feedback_summary()
    assert (summary["up"], summary["down"]) == (1, 1) and summary["latest_down"][0]["comment"] == "wrong page"
    assert other.conversations.trace(follow.turn_id)["completed_question"] == follow.completed_question


def test_each_event_is_claimed_once_across_engines(postgres_url: str) -> None:
    """Two engines (as two replicas would have) claim the same events from 16 threads: one claim wins each."""
    stores = []
    for _ in range(2):
        engine = make_engine(postgres_url)
        upgrade(engine)
        stores.append(ConversationStore(sessions=make_sessions(engine)))
    keys = [f"T1:ev{i}" for i in range(10)]
    attempts = [(stores[n % 2], key) for n in range(8) for key in keys]
    with ThreadPoolExecutor(max_workers=16) as pool:
        won = list(pool.map(lambda attempt: (attempt[1], attempt[0].claim_event(attempt[1])), attempts))
    assert sorted(key for key, claimed in won if claimed) == sorted(keys)
    assert sum(claimed for _key, claimed in won) == len(keys)
