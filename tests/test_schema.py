"""An upgrade keeps what an older release stored: missing tables and columns are added, nothing is dropped.
Every test runs on SQLite and on a real PostgreSQL (tests/conftest.py starts it once per session)."""

from pathlib import Path

import pytest
from sqlalchemy import inspect, text

from threadwise.db.base import SCHEMA_VERSION, make_engine, make_sessions
from threadwise.db.conversations import ConversationStore, ThreadKey
from threadwise.db.schema import upgrade


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'old.sqlite'}"
    return str(request.getfixturevalue("postgres_url"))


TURN = {
    "question": "q",
    "completed_question": "q",
    "answer": "a",
    "sources": [],
    "cited": [],
    "trace": {},
    "timings": {},
    "config": {},
}


def test_upgrade_adds_a_missing_column_and_keeps_old_rows(database_url: str) -> None:
    url = database_url
    engine = make_engine(url)
    assert upgrade(engine) == SCHEMA_VERSION
    store = ConversationStore(sessions=make_sessions(engine))
    cid = store.conversation_id(ThreadKey("slack", "T", "C", "1.0"))
    assert cid is not None
    turn_id = store.add_turn(cid, **TURN)
    with engine.begin() as conn:  # an older release had no message_ref nor confidence column
        conn.execute(text("ALTER TABLE turns DROP COLUMN message_ref"))
        conn.execute(text("ALTER TABLE turns DROP COLUMN confidence"))
    assert "message_ref" not in {c["name"] for c in inspect(engine).get_columns("turns")}
    engine.dispose()

    engine = make_engine(url)
    upgrade(engine)
    assert {"message_ref", "confidence"} <= {c["name"] for c in inspect(engine).get_columns("turns")}
    store = ConversationStore(sessions=make_sessions(engine))
    turn = store.turn(turn_id)
    assert turn is not None and turn.answer == "a" and turn.message_ref is None and turn.confidence is None
    sure = {"score": 1.0, "level": "high", "reason": "one page, exact match"}
    again = store.add_turn(cid, **TURN, confidence=sure)
    assert store.turn(again).confidence == sure  # type: ignore[union-attr]
    store.set_message_ref(turn_id, "1700000000.0001")
    assert store.turn(turn_id).message_ref == "1700000000.0001"  # type: ignore[union-attr]


def test_upgrade_widens_short_strings_on_postgresql(postgres_url: str) -> None:
    """An older release had 64-character thread ids; PostgreSQL enforces that, so the upgrade widens it."""
    engine = make_engine(postgres_url)
    upgrade(engine)
    store = ConversationStore(sessions=make_sessions(engine))
    cid = store.conversation_id(ThreadKey("teams", "T", "C", "1.0"))
    with engine.begin() as conn:
        conn.execute(text('ALTER TABLE conversations ALTER COLUMN "thread" TYPE VARCHAR(64)'))
    teams_thread = "19:" + "a" * 80 + "@thread.tacv2;messageid=1700000000000"
    with pytest.raises(Exception, match="too long"):
        store.conversation_id(ThreadKey("teams", "T", "C", teams_thread))
    engine.dispose()

    engine = make_engine(postgres_url)
    upgrade(engine)
    columns = {c["name"]: c["type"] for c in inspect(engine).get_columns("conversations")}
    assert getattr(columns["thread"], "length", None) == 255
    store = ConversationStore(sessions=make_sessions(engine))
    assert store.conversation_id(ThreadKey("teams", "T", "C", "1.0")) == cid  # the old row is kept
    assert store.conversation_id(ThreadKey("teams", "T", "C", teams_thread)) != cid


def test_upgrade_makes_a_short_title_column_text_on_postgresql(postgres_url: str) -> None:
    """The manifest's title became TEXT (a folder's page JSON may carry any length); an older VARCHAR column
    is widened in place, keeping its rows."""
    from threadwise.index.manifest import IndexManifest, PageState

    engine = make_engine(postgres_url)
    upgrade(engine)
    manifest = IndexManifest(engine=engine, collection="evidence")
    manifest.create("hashing")
    manifest.put(PageState("1", "ENG", 1, "h1", "Short", 2))
    with engine.begin() as conn:
        conn.execute(text('ALTER TABLE index_pages ALTER COLUMN "title" TYPE VARCHAR(64)'))
    engine.dispose()

    engine = make_engine(postgres_url)
    upgrade(engine)
    columns = {c["name"]: c["type"] for c in inspect(engine).get_columns("index_pages")}
    assert getattr(columns["title"], "length", None) is None
    manifest = IndexManifest(engine=engine, collection="evidence")
    manifest.put(PageState("2", "ENG", 1, "h2", "T" * 5000, 1))
    states = {s.page_id: s for batch in manifest.states() for s in batch}
    assert states["1"].title == "Short" and len(states["2"].title) == 5000
