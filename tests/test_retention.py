"""Retention: old answers, traces, votes and explanations purged; one user's data forgotten on request."""

from __future__ import annotations

import getpass
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import func, select, update

from tests.support.cli import threadwise_cli_batch
from tests.support.slack_world import build_world
from threadwise.db.conversations import ConversationRow, FeedbackRow, ThreadKey, TurnRow
from threadwise.db.retention import forget_user, purge_older_than, retention_days


def count(world, table) -> int:  # type: ignore[no-untyped-def]
    with world.store._sessions() as s:
        return int(s.scalar(select(func.count()).select_from(table)) or 0)


def test_purge_removes_what_is_older_than_the_retention_period(tmp_path: Path) -> None:
    world = build_world(tmp_path)
    old = world.conversations.ask(
        ThreadKey("slack", "T", "C1", "1.1"), "how do I request a new laptop?", user="U1"
    )
    world.conversations.vote(old.turn_id, "U2", "down", "outdated")
    world.conversations.explain(old.turn_id)
    new = world.conversations.ask(ThreadKey("slack", "T", "C1", "2.2"), "how many vacation days?", user="U1")
    world.conversations.claim_event("slack:old-event")
    long_ago = datetime.now(UTC) - timedelta(days=100)
    with world.store._sessions() as s, s.begin():
        s.execute(update(TurnRow).where(TurnRow.id == old.turn_id).values(created_at=long_ago))
        s.execute(
            update(ConversationRow)
            .where(ConversationRow.id == old.conversation_id)
            .values(created_at=long_ago)
        )
    assert purge_older_than(world.store._sessions, 0).turns == 0  # 0 keeps everything
    removed = purge_older_than(world.store._sessions, 90)
    assert (removed.turns, removed.conversations, removed.feedback, removed.explanations) == (1, 1, 1, 1)
    assert (
        world.conversations.get_turn(old.turn_id) is None
        and world.conversations.get_turn(new.turn_id) is not None
    )
    assert world.store.explanation(old.turn_id) is None and count(world, FeedbackRow) == 0
    assert retention_days({}) == 90 and retention_days({"THREADWISE_RETENTION_DAYS": "7"}) == 7


def test_forget_user_removes_their_questions_votes_and_threads(tmp_path: Path) -> None:
    world = build_world(tmp_path)
    theirs = world.conversations.ask(
        ThreadKey("slack", "T", "C1", "1.1"), "how do I request a new laptop?", user="U1"
    )
    mine = world.conversations.ask(ThreadKey("slack", "T", "C1", "2.2"), "how many vacation days?", user="U2")
    follow = world.conversations.ask(ThreadKey("slack", "T", "C1", "2.2"), "and who approves it?", user="U1")
    world.conversations.vote(mine.turn_id, "U1", "up")
    world.conversations.vote(mine.turn_id, "U2", "up")
    removed = forget_user(world.store._sessions, "U1")
    assert removed.turns == 2 and removed.conversations == 1 and removed.feedback == 1
    assert (
        world.conversations.get_turn(theirs.turn_id) is None
        and world.conversations.get_turn(follow.turn_id) is None
    )
    assert world.conversations.get_turn(mine.turn_id) is not None  # U2's thread stays, without U1's follow-up
    assert world.store.votes(mine.turn_id) == {"U2": "up"}


def test_the_commands(tmp_path: Path) -> None:
    env = {**os.environ, "THREADWISE_DATA_DIR": str(tmp_path / "data"), "THREADWISE_EMBEDDER": "hashing"}
    broken = tmp_path / "docs"
    broken.mkdir()
    (broken / "bad.json").write_text("{not json")
    asked, forgot, purged, indexed = threadwise_cli_batch(
        env,
        ("ask", "how do I set up my development machine?", "--thread", "t1"),
        ("forget-user", getpass.getuser()),  # the CLI asks in its login's name
        ("purge",),
        ("index", "--docs", str(broken)),  # a page that could not be indexed: scripts see exit 1
    )
    assert asked.returncode == 0, asked.stderr
    assert forgot.returncode == 0 and "1 answers" in forgot.stdout, forgot.stdout + forgot.stderr
    assert purged.returncode == 0 and "older than 90 days" in purged.stdout
    assert (tmp_path / "data").stat().st_mode & 0o077 == 0  # the data folder is the service user's alone
    assert indexed.returncode == 1 and "could not be indexed" in indexed.stderr, indexed.stderr
