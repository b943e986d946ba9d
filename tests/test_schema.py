"""An upgrade keeps what an older release stored: missing tables and columns are added, nothing is dropped."""

from pathlib import Path

from sqlalchemy import inspect, text

from threadwise.db.base import SCHEMA_VERSION, make_engine, make_sessions
from threadwise.db.conversations import ConversationStore, ThreadKey
from threadwise.db.schema import upgrade


def test_upgrade_adds_a_missing_column_and_keeps_old_rows(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.sqlite'}"
    engine = make_engine(url)
    assert upgrade(engine) == SCHEMA_VERSION
    store = ConversationStore(sessions=make_sessions(engine))
    cid = store.conversation_id(ThreadKey("slack", "T", "C", "1.0"))
    assert cid is not None
    turn_id = store.add_turn(
        cid,
        question="q",
        completed_question="q",
        answer="a",
        sources=[],
        cited=[],
        trace={},
        timings={},
        config={},
    )
    with engine.begin() as conn:  # an older release had no message_ref column
        conn.execute(text("ALTER TABLE turns DROP COLUMN message_ref"))
    assert "message_ref" not in {c["name"] for c in inspect(engine).get_columns("turns")}
    engine.dispose()

    engine = make_engine(url)
    upgrade(engine)
    assert "message_ref" in {c["name"] for c in inspect(engine).get_columns("turns")}
    store = ConversationStore(sessions=make_sessions(engine))
    turn = store.turn(turn_id)
    assert turn is not None and turn.answer == "a" and turn.message_ref is None
    store.set_message_ref(turn_id, "1700000000.0001")
    assert store.turn(turn_id).message_ref == "1700000000.0001"  # type: ignore[union-attr]
