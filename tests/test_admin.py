"""The admin service, its CLI commands and the scheduler, against the local Confluence and a real SQLite file."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.fake_confluence import FakeConfluence, FakePage, tree_wiki
from tests.support.sync_env import SyncEnv, make_env
from threadwise.cli import admin_cmds
from threadwise.sync.admin import AdminError, AdminService
from threadwise.sync.scheduler import SyncScheduler
from threadwise.sync.store import SyncStore


@pytest.fixture
def fake() -> Iterator[FakeConfluence]:
    pages = tree_wiki() + [
        FakePage(id="500", space="HR", title="Leave policy", body="<p>30 days of leave.</p>")
    ]
    with FakeConfluence(pages=pages, context_path="/confluence", space_names={"HR": "People"}) as server:
        yield server


@pytest.fixture(params=["sqlite", "postgresql"])
def env(request: pytest.FixtureRequest, tmp_path: Path, fake: FakeConfluence) -> SyncEnv:
    """The whole admin and sync stack, its state on SQLite and on a real PostgreSQL."""
    database_url = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    return make_env(tmp_path, fake.url, database_url=database_url)


def test_unknown_space_is_refused_with_the_visible_spaces(env: SyncEnv) -> None:
    with pytest.raises(AdminError) as refused:
        env.admin.add_space("NOPE")
    assert "no space 'NOPE'" in str(refused.value) and "Visible spaces: DOCS, HR (People)" in str(
        refused.value
    )
    with pytest.raises(AdminError, match="Did you mean DOCS"):
        env.admin.add_space("docs")
    assert env.admin.list_spaces() == []


def test_parent_page_is_checked(env: SyncEnv) -> None:
    with pytest.raises(AdminError, match="parent page 999 cannot be read"):
        env.admin.add_space("DOCS", parent_id="999")
    with pytest.raises(AdminError, match="is in space HR, not DOCS"):
        env.admin.add_space("DOCS", parent_id="500")
    config = env.admin.add_space("DOCS", parent_id="110", exclude_labels=["policy", " "])
    assert (config.parent_id, config.exclude_labels) == ("110", ("policy",))


def test_add_sync_status_remove(env: SyncEnv, fake: FakeConfluence) -> None:
    env.admin.add_space("DOCS", exclude_labels=["draft"])
    env.admin.add_space("HR")
    assert [c.key for c in env.admin.list_spaces()] == ["DOCS", "HR"]
    reports = env.admin.sync()
    assert [(r.space, r.status, r.counts.added) for r in reports] == [("DOCS", "ok", 5), ("HR", "ok", 1)]

    status = {s.key: s for s in env.admin.status()}
    docs = status["DOCS"]
    assert docs.pages == 5 and docs.evidences == env.index.count("DOCS") > 0
    assert docs.last_run is not None and docs.last_run.added == 5 and docs.last_run.status == "ok"
    assert docs.last_success_at is not None and docs.scope == "DOCS without labels draft"
    json.dumps([s.to_json() for s in status.values()])  # serializable for `status --json`

    env.admin.set_channel_spaces("C1", ["HR"])
    removed = env.admin.remove_space("HR")
    assert removed == 1 and env.index.page_states("HR") == {} and env.admin.channel_spaces("C1") == ()
    assert [c.key for c in env.admin.list_spaces()] == ["DOCS"]
    with pytest.raises(AdminError, match="not configured"):
        env.admin.remove_space("HR")


def test_admin_survives_429_and_500(env: SyncEnv, fake: FakeConfluence) -> None:
    fake.faults.retry_after = "0.01"
    fake.faults.next_statuses = [429, 500, 503]
    env.admin.add_space("HR")
    fake.faults.next_statuses = [500, 429]
    assert env.admin.sync("HR")[0].status == "ok"


def test_a_failing_space_does_not_stop_the_others(env: SyncEnv, fake: FakeConfluence) -> None:
    env.admin.add_space("DOCS")
    env.admin.add_space("HR")
    fake.faults.forbidden_spaces = {"DOCS"}
    docs, hr = env.admin.sync()
    assert docs.status == "failed" and "no access to space DOCS" in docs.error
    assert hr.status == "ok"


def test_channel_spaces(env: SyncEnv) -> None:
    env.admin.add_space("DOCS")
    env.admin.add_space("HR")
    assert env.admin.channel_spaces("C1") == ()
    assert env.admin.set_channel_spaces("C1", ["HR", "DOCS", "HR"]) == ("DOCS", "HR")
    with pytest.raises(AdminError, match="unknown spaces XX"):
        env.admin.set_channel_spaces("C1", ["XX"])
    assert env.admin.set_channel_spaces("C1", []) == ()


def test_without_confluence_listing_and_status_still_work(env: SyncEnv) -> None:
    offline = AdminService(sessions=env.sessions, index=env.index)
    assert offline.list_spaces() == [] and offline.status() == []
    with pytest.raises(AdminError, match="CONFLUENCE_URL"):
        offline.add_space("DOCS")
    with pytest.raises(AdminError, match="CONFLUENCE_URL"):
        offline.sync()


@dataclass
class Parts:
    admin: AdminService


def run_cli(env: SyncEnv, *argv: str) -> int:
    parser = argparse.ArgumentParser(prog="threadwise")
    admin_cmds.register(parser.add_subparsers(dest="command", required=True), lambda: Parts(env.admin))
    args = parser.parse_args(argv)
    return int(args.func(args))


def test_cli_commands(env: SyncEnv, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(env, "spaces", "add", "NOPE") == 1
    assert "Visible spaces" in capsys.readouterr().err
    assert run_cli(env, "spaces", "add", "DOCS", "--parent", "110", "--exclude-label", "policy") == 0
    assert "DOCS under page 110 without labels policy" in capsys.readouterr().out
    assert run_cli(env, "spaces", "list", "--available") == 0
    assert capsys.readouterr().out.splitlines() == ["DOCS\tDOCS\tglobal", "HR\tPeople\tglobal"]
    assert run_cli(env, "sync") == 0
    assert "DOCS: 3 pages, 3 added" in capsys.readouterr().out
    assert run_cli(env, "status") == 0
    out = capsys.readouterr().out
    assert "DOCS (DOCS): 3 pages" in out and "last sync" in out and "3 added" in out
    assert run_cli(env, "status", "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert data[0]["key"] == "DOCS" and data[0]["last_run"]["added"] == 3
    assert run_cli(env, "spaces", "remove", "DOCS") == 0
    assert "3 pages purged" in capsys.readouterr().out


def wait_for(condition: object, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


def test_scheduler_runs_syncs_and_sync_now(env: SyncEnv, fake: FakeConfluence) -> None:
    env.admin.add_space("HR")
    store = SyncStore(sessions=env.sessions)
    seen: list[str] = []
    scheduler = SyncScheduler(
        admin=env.admin, interval_minutes=60, on_reports=lambda rs: seen.extend(r.status for r in rs)
    )
    scheduler.start(run_now=True)
    try:
        wait_for(lambda: len(seen) == 1)
        assert store.last_run("HR").trigger == "schedule"  # type: ignore[union-attr]
        assert scheduler.next_run_at() is not None
        fake.edit_page("500", body="<p>32 days of leave.</p>")
        scheduler.sync_now("HR")
        wait_for(lambda: len(seen) == 2)
        last = store.last_run("HR")
        assert last is not None and last.trigger == "manual" and last.updated == 1
    finally:
        scheduler.shutdown()
    assert not scheduler.running


def test_the_scheduler_purges_daily_and_keeps_its_housekeeping_without_syncs(env: SyncEnv) -> None:
    """`serve --no-sync` (or no Confluence): no syncs, but the retention purge still runs, at once and daily."""
    env.admin.add_space("HR")
    purged: list[str] = []
    scheduler = SyncScheduler(admin=env.admin, interval_minutes=60, purge=lambda: purged.append("purged"))
    scheduler.syncing = False
    scheduler.start(run_now=True)
    try:
        wait_for(lambda: purged == ["purged"])
        assert scheduler.next_run_at() is None  # no sync job
        assert SyncStore(sessions=env.sessions).last_run("HR") is None
        assert scheduler.next_digest_at() is not None
    finally:
        scheduler.shutdown()
